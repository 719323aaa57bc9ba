from remotedbg.cli import main

main()
