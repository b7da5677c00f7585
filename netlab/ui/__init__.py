"""Thin ipywidgets panels for the chapters. Each panel is a class whose ``widget`` can be
displayed, whose controls can be set from code (tests do), and whose last result is kept."""
