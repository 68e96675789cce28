from sonnx_check.entry import main

main()
