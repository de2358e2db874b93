pytest_plugins = ["tensorflow_ignite.testing.pytest_plugin"]
