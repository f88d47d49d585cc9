"""The program's regions: a problem's Model captured as a graph of ops (torch.fx), their measured
time, windows of consecutive connected ops sized by time share, and a window cut out as a module
of its own or replaced inside the rest (docs/ARCHITECTURE.md §2)."""
