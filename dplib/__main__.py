"""``python -m dplib`` runs the tour."""

from dplib.tour import main

main()
