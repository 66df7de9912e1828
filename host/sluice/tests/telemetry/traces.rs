//! Traces received by a real OTLP receiver.
