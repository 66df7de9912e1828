//! The OTLP/HTTP (protobuf) span exporter: a batch processor whose queue is bounded (a span
//! that finds it full is dropped and counted, never waited for), sending with reqwest's
//! blocking client on the processor's own thread, so that no call, request or run waits
//! for a collector.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use opentelemetry::Context;
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider, Span, SpanData, SpanExporter,
    SpanProcessor,
};

use crate::TelemetryError;

/// The spans waiting for export, at most: past this, a span that ends is dropped (counted in
/// `sluice_telemetry_spans_dropped_total`). `OTEL_BSP_MAX_QUEUE_SIZE` does not change it.
pub const MAX_QUEUED_SPANS: usize = 4096;

/// The metric counting the spans dropped because the export queue was full.
pub const SPANS_DROPPED_METRIC: &str = "sluice_telemetry_spans_dropped_total";

/// How long one export request may take, including the answer's body.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// The largest answer body read from a collector.
const MAX_ANSWER_BYTES: u64 = 1 << 20;

/// The tracer provider exporting to `endpoint` (a base URL, `/v1/traces` appended), or to
/// where the standard `OTEL_EXPORTER_OTLP_*` variables say when `None`.
pub(crate) fn provider(endpoint: Option<&str>) -> Result<SdkTracerProvider, TelemetryError> {
    let client = reqwest::blocking::Client::builder()
        .timeout(EXPORT_TIMEOUT)
        .build()
        .map_err(|e| TelemetryError::Exporter(e.to_string()))?;
    let mut builder = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(Blocking(client));
    if let Some(base) = endpoint {
        builder = builder.with_endpoint(format!("{}/v1/traces", base.trim_end_matches('/')));
    }
    let exporter = builder
        .build()
        .map_err(|e| TelemetryError::Exporter(e.to_string()))?;
    let queued = Arc::new(AtomicUsize::new(0));
    let batch = BatchSpanProcessor::builder(Counted {
        inner: exporter,
        queued: queued.clone(),
    })
    .with_batch_config(
        BatchConfigBuilder::default()
            .with_max_queue_size(MAX_QUEUED_SPANS)
            .build(),
    )
    .build();
    Ok(SdkTracerProvider::builder()
        .with_span_processor(Bounded {
            inner: batch,
            queued,
        })
        .with_resource(resource())
        .build())
}

/// The resource: `OTEL_RESOURCE_ATTRIBUTES` and `OTEL_SERVICE_NAME` (the SDK's detectors),
/// the service name `sluice` unless either names one.
fn resource() -> Resource {
    let named = std::env::var("OTEL_SERVICE_NAME").is_ok_and(|v| !v.is_empty())
        || std::env::var("OTEL_RESOURCE_ATTRIBUTES").is_ok_and(|v| {
            v.split(',')
                .any(|kv| kv.trim().starts_with("service.name="))
        });
    let builder = Resource::builder();
    if named {
        builder.build()
    } else {
        builder.with_service_name("sluice").build()
    }
}

/// reqwest's blocking client as the exporter's HTTP client. The batch processor exports on
/// a thread of its own, outside any async runtime, which the async client needs.
#[derive(Debug)]
struct Blocking(reqwest::blocking::Client);

#[async_trait::async_trait]
impl HttpClient for Blocking {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        use std::io::Read as _;
        let request = reqwest::blocking::Request::try_from(request)?;
        let mut answer = self.0.execute(request)?;
        let status = answer.status();
        let headers = std::mem::take(answer.headers_mut());
        let mut body = Vec::new();
        answer.take(MAX_ANSWER_BYTES).read_to_end(&mut body)?;
        let mut response = Response::builder().status(status).body(Bytes::from(body))?;
        *response.headers_mut() = headers;
        Ok(response)
    }
}

/// The batch processor behind a bound of its own: a span that ends while
/// [`MAX_QUEUED_SPANS`] wait is dropped and counted here, so every drop is counted (the
/// SDK's queue, as large, never fills).
#[derive(Debug)]
struct Bounded {
    inner: BatchSpanProcessor,
    /// Spans handed to `inner` and not yet taken by an export.
    queued: Arc<AtomicUsize>,
}

impl SpanProcessor for Bounded {
    fn on_start(&self, span: &mut Span, cx: &Context) {
        self.inner.on_start(span, cx);
    }

    fn on_end(&self, span: SpanData) {
        if self.queued.fetch_add(1, Ordering::Relaxed) >= MAX_QUEUED_SPANS {
            self.queued.fetch_sub(1, Ordering::Relaxed);
            metrics::counter!(SPANS_DROPPED_METRIC).increment(1);
            return;
        }
        self.inner.on_end(span);
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// The exporter, telling [`Bounded`] how many spans left the queue.
#[derive(Debug)]
struct Counted<E> {
    inner: E,
    queued: Arc<AtomicUsize>,
}

impl<E: SpanExporter> SpanExporter for Counted<E> {
    fn export(
        &self,
        batch: Vec<SpanData>,
    ) -> impl std::future::Future<Output = OTelSdkResult> + Send {
        self.queued.fetch_sub(batch.len(), Ordering::Relaxed);
        self.inner.export(batch)
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}
