"""SimKube trace files: the format, its rules, reading, writing and transforming them."""
