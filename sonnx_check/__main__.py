from sonnx_check.cli import main

main()
