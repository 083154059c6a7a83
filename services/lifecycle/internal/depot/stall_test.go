package depot

import (
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"

	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// drip serves body slowly: the first head bytes at once, then either
// nothing (silent) or one byte every 5ms, until the client goes away. It
// reports on gone when the client closed the connection.
func drip(body []byte, head int, silent bool, gone chan<- struct{}) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body[:head])
		w.(http.Flusher).Flush()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		giveUp := time.After(20 * time.Second) // the test fails long before
		for i := head; i < len(body); {
			select {
			case <-r.Context().Done():
				gone <- struct{}{}
				return
			case <-giveUp:
				return
			case <-tick.C:
				if silent {
					continue
				}
				_, _ = w.Write(body[i : i+1])
				w.(http.Flusher).Flush()
				i++
			}
		}
	}
}

// dripRegistry proxies a registry, dripping blob downloads.
func dripRegistry(t *testing.T, upstream string, silent bool, gone chan<- struct{}) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, err := http.NewRequestWithContext(r.Context(), r.Method, "http://"+upstream+r.URL.RequestURI(), nil)
		require.NoError(t, err)
		req.Header = r.Header.Clone()
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/") && resp.StatusCode == http.StatusOK && len(body) > 200 {
			drip(body, 100, silent, gone)(w, r)
			return
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// Downloads that stall are given up, over HTTPS and OCI, both when no byte
// comes and when bytes come too slowly, naming how many bytes arrived; the
// connection is closed (issue 16 §6).
func TestStalledDownloadsAreGivenUp(t *testing.T) {
	fx := newFixture(t)
	tarball, err := os.ReadFile(fx.tarPath)
	require.NoError(t, err)
	noByte := Stall{Timeout: 300 * time.Millisecond, MinRate: -1}
	tooSlow := Stall{Timeout: 10 * time.Second, MinRate: 10 << 10, Window: 300 * time.Millisecond}
	cases := []struct {
		name   string
		silent bool
		stall  Stall
		want   string
	}{
		{"no byte", true, noByte, "no data for 300ms after "},
		{"below the floor", false, tooSlow, "below the floor of 10240 bytes/s"},
	}
	for _, c := range cases {
		t.Run("https/"+c.name, func(t *testing.T) {
			gone := make(chan struct{}, 8)
			fx.srv.Handle("drip-"+strings.ReplaceAll(c.name, " ", "-")+".tar", drip(tarball, 100, c.silent, gone))
			s := newTestStore(t)
			f := s.fetcher(t, trust(fx.srv), func(cfg *Config) { cfg.Stall = c.stall })
			_, err := f.Fetch(context.Background(), fx.srv.URL("drip-"+strings.ReplaceAll(c.name, " ", "-")+".tar"), nil)
			t.Log(err)
			require.ErrorIs(t, err, ErrStalled)
			require.ErrorIs(t, err, bundle.ErrFetch)
			require.ErrorContains(t, err, c.want)
			require.ErrorContains(t, err, "the transfer stalled")
			require.Regexp(t, `after [1-9][0-9]* bytes`, err.Error())
			require.Equal(t, 1, strings.Count(err.Error(), "drip-"), "the source is named once: %v", err)
			waitGone(t, gone)
			s.requireOnly(t)
		})
		t.Run("oci/"+c.name, func(t *testing.T) {
			gone := make(chan struct{}, 8)
			host := dripRegistry(t, fx.reg.Host, c.silent, gone)
			s := newTestStore(t)
			f := s.fetcher(t, func(cfg *Config) { cfg.Stall = c.stall })
			_, err := f.Fetch(context.Background(), "oci://"+host+"/"+fx.repoTag, nil)
			t.Log(err)
			require.ErrorIs(t, err, ErrStalled)
			require.ErrorIs(t, err, bundle.ErrFetch)
			require.ErrorContains(t, err, c.want)
			require.Regexp(t, `after [1-9][0-9]* bytes`, err.Error())
			waitGone(t, gone)
			s.requireOnly(t)
		})
	}
}

func waitGone(t *testing.T, gone <-chan struct{}) {
	t.Helper()
	select {
	case <-gone:
	case <-time.After(10 * time.Second):
		t.Fatal("the server never saw the connection closed")
	}
}

// A fast transfer is unaffected by tight bounds, and negative bounds turn
// the checks off.
func TestStallBoundsLeaveHealthyTransfersAlone(t *testing.T) {
	fx := newFixture(t)
	s := newTestStore(t)
	f := s.fetcher(t, trust(fx.srv), func(cfg *Config) {
		cfg.Stall = Stall{Timeout: 2 * time.Second, MinRate: 1024, Window: 50 * time.Millisecond}
	})
	b, err := f.Fetch(context.Background(), fx.tarURL, nil)
	require.NoError(t, err)
	require.Equal(t, fx.digest, b.Digest)

	body := &stallBody{rc: io.NopCloser(bytes.NewReader([]byte("abc"))), limit: Stall{Timeout: -1, MinRate: -1, Window: -1}, cancel: func() {}}
	got, err := io.ReadAll(body)
	require.NoError(t, err)
	require.Equal(t, "abc", string(got))
	require.Equal(t, Stall{Timeout: DefaultStallTimeout, MinRate: DefaultMinRate, Window: DefaultRateWindow}, Stall{}.withDefaults())
}
