package hook

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	precheckv1 "github.com/vcfsm/vcfsm/gen/vcfservices/precheck/v1"
	"github.com/vcfsm/vcfsm/services/precheck/internal/samplehook"
)

// fanout builds n hook requests for n distinct in-cluster services, all
// resolved to one sample hook server, plus the dispatcher.
func fanout(b *testing.B, n int, answers samplehook.File, timeout time.Duration) (*Dispatcher, []*precheckv1.DispatchHookRequest) {
	b.Helper()
	srv := httptest.NewServer(samplehook.NewHandler(samplehook.Config{Answers: answers}))
	b.Cleanup(srv.Close)
	addr := srv.Listener.Addr().String()
	entries := make([]string, 0, n)
	reqs := make([]*precheckv1.DispatchHookRequest, 0, n)
	target := packageYAML(b, ann("_data", `{"check":"ready"}`))
	for i := range n {
		svc := fmt.Sprintf("hook-%03d", i)
		entries = append(entries, svc+"."+testNS+".svc.cluster.local="+addr)
		url := "check"
		if i == 0 {
			url = "first" // answers.Paths may single this one out
		}
		reqs = append(reqs, &precheckv1.DispatchHookRequest{
			SourcePackageYaml: packageYAML(b, ann("_service", svc, "_url", url, "_method", "POST")),
			TargetPackageYaml: target,
			Namespace:         testNS,
		})
	}
	resolver, err := NewResolver(entries, nil)
	require.NoError(b, err)
	d, err := NewDispatcher(Options{Token: testToken, Resolver: resolver, Timeout: timeout})
	require.NoError(b, err)
	return d, reqs
}

// BenchmarkDispatchAll200SlowHooks: 200 hooks that each answer after
// 100 ms, with the default concurrency. Goal: under 400 ms per fan-out.
func BenchmarkDispatchAll200SlowHooks(b *testing.B) {
	answers := samplehook.File{Answer: samplehook.Answer{
		Delay:   samplehook.Duration(100 * time.Millisecond),
		Results: []samplehook.Result{{Severity: "INFO", Message: "ready"}},
	}}
	d, reqs := fanout(b, 200, answers, DefaultTimeout)
	for b.Loop() {
		res, err := d.DispatchAll(context.Background(), reqs)
		if err != nil {
			b.Fatal(err)
		}
		for i, r := range res {
			if r.GetBlocked() || len(r.GetResults()) != 1 {
				b.Fatalf("hook %d: blocked=%v failure=%q results=%d", i, r.GetBlocked(), r.GetFailure(), len(r.GetResults()))
			}
		}
	}
}

// BenchmarkDispatchAllOneHookHangs: 199 hooks answer after 100 ms, one
// never answers; with a 500 ms timeout the report is back right after it.
func BenchmarkDispatchAllOneHookHangs(b *testing.B) {
	answers := samplehook.File{
		Answer: samplehook.Answer{Delay: samplehook.Duration(100 * time.Millisecond)},
		Paths:  map[string]samplehook.Answer{"first": {Hang: true}},
	}
	d, reqs := fanout(b, 200, answers, 500*time.Millisecond)
	for b.Loop() {
		res, err := d.DispatchAll(context.Background(), reqs)
		if err != nil {
			b.Fatal(err)
		}
		if !res[0].GetBlocked() {
			b.Fatalf("the hanging hook was not cut: %+v", res[0])
		}
		for i, r := range res[1:] {
			if r.GetBlocked() {
				b.Fatalf("hook %d: %s", i+1, r.GetFailure())
			}
		}
	}
}
