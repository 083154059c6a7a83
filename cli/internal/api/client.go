// Package api is vcfctl's client of the REST /v2 surface: plain net/http,
// JSON bodies as the gateway writes them, the watch stream as NDJSON.
package api

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// Accept is the media type (with API version) every request sends.
const Accept = "application/json;version=41.0.0-alpha"

// Client talks to one server.
type Client struct {
	base  string
	token string
	http  *http.Client
	// stream has no overall timeout: a watch lasts as long as its context.
	stream *http.Client
}

// New builds a client for server (http:// or https://); caFile, when set,
// is the PEM bundle that verifies the server's certificate.
func New(server, token, caFile string) (*Client, error) {
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("server %q is not an http:// or https:// URL", server)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if caFile != "" {
		pem, err := os.ReadFile(caFile) //nolint:gosec // the user names the CA file
		if err != nil {
			return nil, fmt.Errorf("read --ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--ca-file %s holds no PEM certificate", caFile)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &Client{
		base:   strings.TrimSuffix(u.String(), "/"),
		token:  token,
		http:   &http.Client{Transport: tr, Timeout: 2 * time.Minute},
		stream: &http.Client{Transport: tr},
	}, nil
}

func (c *Client) request(ctx context.Context, method, path string, body any) (*http.Request, error) {
	var rd io.Reader
	switch v := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(v)
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("encode request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Accept", Accept)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return req, nil
}

// Do sends a request and returns the body of a 2xx answer. body is
// JSON-encoded unless it is already []byte. Every answer must carry the
// Service Manager's identity header.
func (c *Client) Do(ctx context.Context, method, path string, body any) ([]byte, error) {
	req, err := c.request(ctx, method, path, body)
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.transportError(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if err := c.checkIdentity(resp); err != nil {
		return nil, err
	}
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("read the answer of %s: %w", c.base, err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, errorOf(resp, raw)
	}
	return raw, nil
}

// Identify asks, without sending the token, whether the server is a
// Service Manager (its /healthz answers with the identity header), so a
// token is never handed to another server at login.
func (c *Client) Identify(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/healthz", nil)
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return c.transportError(err)
	}
	defer func() { _ = resp.Body.Close() }()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	return c.checkIdentity(resp)
}

// Server is the base URL the client talks to.
func (c *Client) Server() string { return c.base }

// transportError names the server once instead of the whole request URL.
func (c *Client) transportError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("cannot reach %s: %w", c.base, err)
}

// Watch streams the service's watch route, calling fn with every event's
// raw JSON (the "result" object) until the stream ends, fn returns an
// error, or ctx ends. ErrStop from fn ends the watch without error.
func (c *Client) Watch(ctx context.Context, id string, fn func(raw json.RawMessage) error) error {
	return c.WatchUntil(ctx, id, "", fn)
}

// WatchUntil is Watch with ?until=<status>: the server ends the stream
// after the event where the service has that status or its operation
// failed; empty until watches until the stream is closed. A stream the
// server breaks off is a *StreamClosedError.
func (c *Client) WatchUntil(ctx context.Context, id, until string, fn func(raw json.RawMessage) error) error {
	path := "/v2/vcf-services/" + url.PathEscape(id) + "/watch"
	if until != "" {
		path += "?until=" + url.QueryEscape(until)
	}
	req, err := c.request(ctx, http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	resp, err := c.stream.Do(req)
	if err != nil {
		return c.transportError(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if err := c.checkIdentity(resp); err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return errorOf(resp, raw)
	}
	err = readEvents(resp.Body, id, fn)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// readEvents calls fn with each event of a watch stream.
func readEvents(body io.Reader, id string, fn func(raw json.RawMessage) error) error {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var m struct {
			Result json.RawMessage `json:"result"`
			Error  *statusBody     `json:"error"`
		}
		if err := json.Unmarshal(line, &m); err != nil {
			return fmt.Errorf("watch %s: the server sent a line that is not an event (%.80q): %w", id, line, err)
		}
		if m.Error != nil {
			return streamError(id, m.Error)
		}
		if err := fn(m.Result); err != nil {
			if errors.Is(err, ErrStop) {
				return nil
			}
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return &StreamClosedError{ID: id, Cause: err.Error()}
	}
	return nil
}

// gRPC codes a broken-off stream ends with: the server's side of the
// stream was cancelled or its transport went away.
const (
	codeCanceled    = 1
	codeUnavailable = 14
)

// streamError turns an error event into an error: a stream the server
// stopped is said in words, anything else is the server's message.
func streamError(id string, st *statusBody) error {
	code := -1
	if st.Code != nil {
		code = *st.Code
	}
	if code == codeCanceled || code == codeUnavailable {
		return &StreamClosedError{ID: id}
	}
	return &Error{Status: http.StatusOK, Code: code, Message: st.Message}
}

// ErrStop ends a watch from its callback.
var ErrStop = errors.New("stop watching")
