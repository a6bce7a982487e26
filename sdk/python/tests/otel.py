"""The OpenTelemetry SDK for the tests, when it is installed: one global tracer provider (set once
per process) exporting to EXPORTER, in memory."""

import unittest

try:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
except ImportError:  # pragma: no cover - depends on the environment
    AVAILABLE = False
    EXPORTER = None
else:
    AVAILABLE = True
    EXPORTER = InMemorySpanExporter()
    _provider = TracerProvider()
    _provider.add_span_processor(SimpleSpanProcessor(EXPORTER))
    trace.set_tracer_provider(_provider)

needs_sdk = unittest.skipUnless(AVAILABLE, "opentelemetry-sdk is not installed")
