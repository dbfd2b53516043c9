"""fusec's frontends: torch.fx graphs (torch-level and ATen-level) imported into
the `aten` dialect (`fusec.frontend.importer.Importer` and its tables)."""
