"""The PySide6 desktop app. Only this package (and the PDF drawing) imports Qt."""
