from delta_contracts.cli import main

main()
