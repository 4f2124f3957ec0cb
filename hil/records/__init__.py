"""What a run reads and writes, as typed records with their readers and checks: the .pte, the console log,
the ELF symbols, tensors, the profile (Profile/Event), the manifest and its evidence (hil.records.validate
checks each file kind). It imports only hil.base, so every layer above can read a run's files."""
