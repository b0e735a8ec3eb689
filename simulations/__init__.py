"""Plants, closed-loop simulation, case studies, figures and the ``dmdidc`` command line."""

__all__: list[str] = []
