from kubectl_sktrace.cli import main

main()
