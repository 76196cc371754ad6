"""flowcert layer."""
