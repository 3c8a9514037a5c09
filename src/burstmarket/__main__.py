from burstmarket.cli import main

main()
