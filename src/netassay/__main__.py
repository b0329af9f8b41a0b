from netassay.cli import main

main()
