import StrataSync
print("replica")
