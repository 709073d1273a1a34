"""kubectl sktrace: record a Kubernetes cluster trace and export it as a SimKube trace file."""

__version__ = "0.2.0"
