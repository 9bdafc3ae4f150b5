package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// startTracing exports traces over OTLP/HTTP when
// OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is
// set and OTEL_SDK_DISABLED is not "true". The exporter reads the
// standard OTEL_EXPORTER_OTLP_* variables itself (headers, timeout,
// protocol http/protobuf), the SDK OTEL_TRACES_SAMPLER and
// OTEL_RESOURCE_ATTRIBUTES; the service is named "trellis" unless
// OTEL_SERVICE_NAME says otherwise. Otherwise it returns a nil tracer:
// nothing is wrapped and tracing costs nothing. The stop function
// flushes what is buffered; cleanup runs it last.
func startTracing(ctx context.Context, getenv func(string) string, log *slog.Logger, cleanup *closers) (trace.Tracer, error) {
	endpoint := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
	if endpoint == "" {
		endpoint = strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT"))
	}
	if endpoint == "" || strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return nil, nil
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName("trellis"), semconv.ServiceVersion(version())),
		resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	cleanup.add(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := tp.Shutdown(sctx); err != nil {
			log.LogAttrs(sctx, slog.LevelWarn, "flushing traces failed", slog.Any("error", err))
		}
	})
	log.LogAttrs(ctx, slog.LevelInfo, "exporting traces over OTLP/HTTP", slog.String("endpoint", endpoint))
	return tp.Tracer("github.com/trellis-ai/trellis"), nil
}
