import os

os.environ.setdefault("COLUMNS", "120")
