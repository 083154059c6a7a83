package vcfsm_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/vcfsm/vcfsm/platform/observability"
	"github.com/vcfsm/vcfsm/services/vcfsm/app"
)

// One upgrade is one trace: the REST request at the gateway, lifecycle's
// gRPC handler, the operation and each of its steps, precheck's
// DispatchHooks and the hook's HTTP call all share its trace id.
func TestOneTraceAcrossGatewayLifecyclePrecheck(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	hook := newHook(t)
	w := newWorld(t, withHook(hook), func(c *app.Config) { c.Telemetry = observability.WithTracer(tp) })
	id, hookCalls := upgradeWithHook(t, w, hook)

	op := poll(t, "the upgrade's operation span", 10*time.Second, func() sdktrace.ReadOnlySpan {
		for _, s := range rec.Ended() {
			if s.Name() == "operation upgrade" {
				return s
			}
		}
		return nil
	}, func(s sdktrace.ReadOnlySpan) bool { return s != nil })
	traceID := op.SpanContext().TraceID()
	var inTrace []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.SpanContext().TraceID() == traceID {
			inTrace = append(inTrace, s)
		}
	}
	find := func(what string, match func(sdktrace.ReadOnlySpan) bool) []sdktrace.ReadOnlySpan {
		var out []sdktrace.ReadOnlySpan
		for _, s := range inTrace {
			if match(s) {
				out = append(out, s)
			}
		}
		require.NotEmpty(t, out, "no %s span in the upgrade's trace; spans: %v", what, names(inTrace))
		return out
	}

	gw := find("gateway PATCH", func(s sdktrace.ReadOnlySpan) bool {
		return s.SpanKind() == trace.SpanKindServer && s.Name() == "PATCH /v2/vcf-services/{id}"
	})
	require.Len(t, gw, 1)
	require.False(t, gw[0].Parent().IsValid(), "the REST request starts the trace")
	find("lifecycle PatchService", func(s sdktrace.ReadOnlySpan) bool {
		return s.SpanKind() == trace.SpanKindServer && strings.HasSuffix(s.Name(), "LifecycleService/PatchService")
	})
	find("precheck DispatchHooks", func(s sdktrace.ReadOnlySpan) bool {
		return s.SpanKind() == trace.SpanKindServer && strings.HasSuffix(s.Name(), "PrecheckService/DispatchHooks")
	})
	hookSpans := find("hook HTTP call", func(s sdktrace.ReadOnlySpan) bool {
		return s.SpanKind() == trace.SpanKindClient && strings.Contains(s.Name(), "POST") && !strings.Contains(s.Name(), "/")
	})
	require.Len(t, hookSpans, hookCalls, "one client span per hook call")

	// One span per step the upgrade ran, children of the operation's.
	steps := find("step", func(s sdktrace.ReadOnlySpan) bool {
		return strings.HasPrefix(s.Name(), "step ") && s.Parent().SpanID() == op.SpanContext().SpanID()
	})
	require.Len(t, steps, w.history(t, id).succeededSteps("upgrade"), "spans: %v", names(steps))
	find("precheck-hook step", func(s sdktrace.ReadOnlySpan) bool { return s.Name() == "step precheck-hook" })
}

func names(spans []sdktrace.ReadOnlySpan) []string {
	out := make([]string, 0, len(spans))
	for _, s := range spans {
		out = append(out, s.Name())
	}
	return out
}
