"""A run's configuration: board files (schema, reading, the BoardConfig), the options that override them,
capabilities and the user's inputs. Import the submodules directly."""
