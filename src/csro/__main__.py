"""``python -m csro`` runs the command line."""

from csro.cli import main

main()
