package vcfsm_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/vcfsm/vcfsm/services/vcfsm/onebox"
)

func BenchmarkZZGetOnly(b *testing.B) {
	w := newWorld(b)
	id := w.installed(b, w.publish(b, v1))
	get := w.box.URL + "/v2/vcf-services/" + id
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, MaxConnsPerHost: 64}, Timeout: 10 * time.Second}
	burst(b, client, get, onebox.Token, 200*time.Millisecond)
	b.ResetTimer()
	n := 0
	for range b.N {
		n += burst(b, client, get, onebox.Token, time.Second)
	}
	b.ReportMetric(float64(n)/float64(b.N), "get-req/s")
}

func BenchmarkZZEchoOnly(b *testing.B) {
	echo := startEcho(b) + "/bench/echo/urn:vcloud:entity:broadcom:vcfService:x"
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, MaxConnsPerHost: 64}, Timeout: 10 * time.Second}
	burst(b, client, echo, "", 200*time.Millisecond)
	b.ResetTimer()
	n := 0
	for range b.N {
		n += burst(b, client, echo, "", time.Second)
	}
	b.ReportMetric(float64(n)/float64(b.N), "echo-req/s")
}
