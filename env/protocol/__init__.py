"""What crosses the trust wall between the judge and a worker: the wire encoding (JSON and raw tensor
bytes, never pickle) and the typed requests and replies of each operation."""
