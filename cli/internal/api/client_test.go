package api

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A TLS server is trusted through --ca-file; the bearer token and the
// versioned Accept header go with every request.
func TestCAFileAndHeaders(t *testing.T) {
	var gotAuth, gotAccept string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth, gotAccept = r.Header.Get("Authorization"), r.Header.Get("Accept")
		_, _ = w.Write([]byte(`{"values":[]}`))
	}))
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600))

	cl, err := New(srv.URL, "secret", ca)
	require.NoError(t, err)
	body, err := cl.Do(context.Background(), http.MethodGet, "/v2/vcf-services", nil)
	require.NoError(t, err)
	require.JSONEq(t, `{"values":[]}`, string(body))
	require.Equal(t, "Bearer secret", gotAuth)
	require.Equal(t, Accept, gotAccept)

	untrusted, err := New(srv.URL, "secret", "")
	require.NoError(t, err)
	_, err = untrusted.Do(context.Background(), http.MethodGet, "/v2/vcf-services", nil)
	require.ErrorContains(t, err, "certificate", "without the CA the server is not trusted")

	bad := filepath.Join(t.TempDir(), "bad.pem")
	require.NoError(t, os.WriteFile(bad, []byte("not a certificate"), 0o600))
	_, err = New(srv.URL, "", bad)
	require.ErrorContains(t, err, "holds no PEM certificate")
	_, err = New("ftp://x", "", "")
	require.ErrorContains(t, err, "not an http:// or https:// URL")
}

func TestErrorsCarryTheServersMessage(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v2/vcf-services/x/watch":
			_, _ = w.Write([]byte("{\"result\":{\"id\":\"x\",\"status\":\"Busy\"}}\n{\"error\":{\"code\":5,\"message\":\"gone\"}}\n"))
		case "/nope":
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"code":5,"message":"service x not found"}`))
		default:
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"code":16,"message":"missing token"}`))
		}
	}))
	defer srv.Close()
	cl, err := New(srv.URL, "", "")
	require.NoError(t, err)
	_, err = cl.Do(context.Background(), http.MethodGet, "/nope", nil)
	require.True(t, IsNotFound(err))
	require.EqualError(t, err, "server answered 404 Not Found: service x not found")
	_, err = cl.Do(context.Background(), http.MethodGet, "/other", nil)
	require.ErrorContains(t, err, "missing token (check the token")

	var events []string
	err = cl.Watch(context.Background(), "x", func(raw json.RawMessage) error {
		events = append(events, string(raw))
		return nil
	})
	require.EqualError(t, err, "watch x: gone", "an error object on the stream ends the watch with its message")
	require.Equal(t, []string{`{"id":"x","status":"Busy"}`}, events)
}
