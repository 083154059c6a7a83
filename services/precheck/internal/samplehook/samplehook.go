// Package samplehook is a pre-check hook endpoint that implements seed
// 000's response contract with configurable answers, for the dev stack,
// demos and end-to-end tests. cmd/samplehook serves it.
package samplehook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// Result is one element of the answer's results array.
type Result struct {
	Severity string `json:"severity"`
	Message  string `json:"message"`
}

// Answer is what the hook answers.
type Answer struct {
	// Status is the HTTP status; 0 means 200.
	Status int `json:"status,omitempty"`
	// Delay holds the answer back, e.g. "100ms".
	Delay Duration `json:"delay,omitempty"`
	// Hang never answers; the caller's timeout ends the call.
	Hang bool `json:"hang,omitempty"`
	// Results are answered as {"results": [...]} unless Body is set.
	Results []Result `json:"results,omitempty"`
	// Body, when set, is answered verbatim instead (to demonstrate
	// "Invalid response body" or an error page).
	Body string `json:"body,omitempty"`
	// ContentType of Body; default text/plain.
	ContentType string `json:"contentType,omitempty"`
}

// File is the answers file: a default answer plus answers by URL path
// (without the leading '/', as the _url annotation names it).
type File struct {
	Answer
	Paths map[string]Answer `json:"paths,omitempty"`
}

// LoadFile reads an answers file, JSON or YAML.
func LoadFile(path string) (File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return File{}, fmt.Errorf("answers file: %w", err)
	}
	var f File
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return File{}, fmt.Errorf("answers file %s: %w", path, err)
	}
	return f, nil
}

// Duration is a time.Duration written as "100ms" in answers files.
type Duration time.Duration

// UnmarshalJSON reads "1.5s".
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("delay: want a duration string such as \"100ms\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("delay: %w", err)
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes "1.5s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// Config configures the handler.
type Config struct {
	Answers File
	// Token, when set, is the only bearer token accepted; other callers
	// get 401, as a hook that authenticates its callers would answer.
	Token  string
	Logger *slog.Logger
}

// maxRequestBody bounds what the hook reads from a caller.
const maxRequestBody = 1 << 20

// NewHandler returns the hook endpoint.
func NewHandler(cfg Config) http.Handler {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, maxRequestBody))
		// The seed advises hook authors to log the full request and the
		// answer; the token is withheld.
		log.Info("pre-check request", "method", r.Method, "path", r.URL.Path, "query", r.URL.RawQuery,
			"headers", redacted(r.Header), "body", string(body))

		status, contentType, out := reject(r, cfg.Token)
		if status == 0 {
			a := pick(cfg.Answers, r.URL.Path)
			if !wait(r, a) {
				log.Info("pre-check request abandoned by the caller", "path", r.URL.Path)
				return
			}
			status, contentType, out = render(a)
		}
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		_, _ = w.Write(out)
		log.Info("pre-check response", "path", r.URL.Path, "status", status, "body", string(out))
	})
}

const textPlain = "text/plain; charset=utf-8"

// reject answers what a real hook refuses before looking at the request:
// a method other than GET or POST, or a caller it does not authenticate.
// Status 0 means the request is accepted.
func reject(r *http.Request, token string) (int, string, []byte) {
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		return http.StatusMethodNotAllowed, textPlain, []byte("method " + r.Method + " not allowed: use GET or POST\n")
	}
	if token != "" && r.Header.Get("Authorization") != "Bearer "+token {
		return http.StatusUnauthorized, textPlain, []byte("unauthenticated: the bearer token is not the one this hook accepts\n")
	}
	return 0, "", nil
}

// render is the configured answer on the wire.
func render(a Answer) (int, string, []byte) {
	status := a.Status
	if status == 0 {
		status = http.StatusOK
	}
	if a.Body != "" {
		ct := a.ContentType
		if ct == "" {
			ct = textPlain
		}
		return status, ct, []byte(a.Body)
	}
	results := a.Results
	if results == nil {
		results = []Result{}
	}
	var buf bytes.Buffer
	_ = json.NewEncoder(&buf).Encode(map[string][]Result{"results": results})
	return status, "application/json", buf.Bytes()
}

// wait holds the answer back; false when the caller went away first.
func wait(r *http.Request, a Answer) bool {
	if a.Hang {
		<-r.Context().Done()
		return false
	}
	if a.Delay <= 0 {
		return true
	}
	t := time.NewTimer(time.Duration(a.Delay))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

func pick(f File, path string) Answer {
	if a, ok := f.Paths[strings.TrimPrefix(path, "/")]; ok {
		return a
	}
	return f.Answer
}

func redacted(h http.Header) map[string]string {
	out := make(map[string]string, len(h))
	for k, v := range h {
		if strings.EqualFold(k, "Authorization") {
			out[k] = "Bearer [redacted]"
			continue
		}
		out[k] = strings.Join(v, ", ")
	}
	return out
}

// HealthPath is where the sample hook server answers its health check
// (the compose stack's): 200 at once, not logged, whatever the configured
// answers and delay are; every other path is the hook.
const HealthPath = "/healthz"

// WithHealth serves GET HealthPath in front of the hook handler.
func WithHealth(hook http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == HealthPath {
			w.Header().Set("Content-Type", textPlain)
			_, _ = w.Write([]byte("ok\n"))
			return
		}
		hook.ServeHTTP(w, r)
	})
}
