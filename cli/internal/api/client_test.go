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
		w.Header().Set(IdentityHeader, "2.0.0")
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
		w.Header().Set(IdentityHeader, "2.0.0")
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v2/vcf-services/x/watch":
			_, _ = w.Write([]byte("{\"result\":{\"id\":\"x\",\"status\":\"Busy\"}}\n{\"error\":{\"code\":5,\"message\":\"gone\"}}\n"))
		case "/v2/vcf-services/y/watch":
			// A stream error before the stream started, in the envelope
			// grpc-gateway writes for streams.
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":{"code":3,"message":"until: \"Helthy\" is not a status"}}`))
		case "/v2/vcf-services/z/watch":
			_, _ = w.Write([]byte("{\"result\":{\"id\":\"z\"}}\n{\"error\":{\"code\":14,\"message\":\"closing transport due to: connection error: desc = \\\"error reading from server: EOF\\\", received prior goaway: code: NO_ERROR\"}}\n"))
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
	require.EqualError(t, err, "service x not found", "the server's message, without an HTTP preamble")
	var apiErr *Error
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, 5, apiErr.Code)
	_, err = cl.Do(context.Background(), http.MethodGet, "/other", nil)
	require.True(t, IsUnauthorized(err))
	require.EqualError(t, err, "missing token")

	var events []string
	err = cl.Watch(context.Background(), "x", func(raw json.RawMessage) error {
		events = append(events, string(raw))
		return nil
	})
	require.EqualError(t, err, "gone", "an error object on the stream ends the watch with its message")
	require.Equal(t, []string{`{"id":"x","status":"Busy"}`}, events)

	err = cl.WatchUntil(context.Background(), "y", "Helthy", func(json.RawMessage) error { return nil })
	require.Equal(t, http.StatusBadRequest, StatusOf(err))
	require.EqualError(t, err, `until: "Helthy" is not a status`, "the stream envelope is read like any error")

	err = cl.Watch(context.Background(), "z", func(json.RawMessage) error { return nil })
	var closed *StreamClosedError
	require.ErrorAs(t, err, &closed)
	require.EqualError(t, err, "the server closed the watch of z: it may be stopping or restarting; run the command again to keep following the service (its operation goes on)")
}

// An answer without the Service Manager's identity header is refused,
// however well it decodes; so is another major API version.
func TestAnswersMustComeFromAServiceManager(t *testing.T) {
	version := ""
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if version != "" {
			w.Header().Set(IdentityHeader, version)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"values":[]}`))
	}))
	defer srv.Close()
	cl, err := New(srv.URL, "", "")
	require.NoError(t, err)
	_, err = cl.Do(context.Background(), http.MethodGet, "/v2/vcf-services", nil)
	var foreign *NotServiceManagerError
	require.ErrorAs(t, err, &foreign)
	require.EqualError(t, err, srv.URL+" does not answer as a VCF Service Manager (HTTP 200, application/json: no X-Vcfsm-Api-Version header): "+
		"check the server address (the REST port of the gateway, e.g. http://127.0.0.1:8080)")
	err = cl.Watch(context.Background(), "x", func(json.RawMessage) error { return nil })
	require.ErrorAs(t, err, &foreign, "the watch checks it too")

	version = "3.1.0"
	_, err = cl.Do(context.Background(), http.MethodGet, "/v2/vcf-services", nil)
	require.EqualError(t, err, srv.URL+" speaks REST API 3.1.0; this vcfctl speaks 2.x: use a vcfctl of the server's version")
	version = "2.4.0"
	_, err = cl.Do(context.Background(), http.MethodGet, "/v2/vcf-services", nil)
	require.NoError(t, err, "any 2.x answers")
}
