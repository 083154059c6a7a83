package app

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/vcfsm/vcfsm/platform/auth"
	"github.com/vcfsm/vcfsm/platform/logging"
)

// BenchmarkGuard is the edge's cost per request before lifecycle sees it:
// token lookup over 4 entries, rate limiter, body cap.
func BenchmarkGuard(b *testing.B) {
	tokens, err := auth.ParseTokens("root:" + adminToken + "\naudit:viewer:" + viewerToken + "\ninternal:service:" + serviceToken + "\nops:operator:guard-operator-token-0123456789")
	if err != nil {
		b.Fatal(err)
	}
	g := newGuard(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), tokens, Limits{RatePerSecond: 1e9, RateBurst: 1e9}, logging.Discard())
	r := request(http.MethodGet, "/v2/vcf-services", adminToken, nil, 0)
	b.ReportAllocs()
	for b.Loop() {
		g.ServeHTTP(httptest.NewRecorder(), r)
	}
}
