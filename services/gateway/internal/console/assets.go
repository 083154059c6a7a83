// Package console serves the web console at /ui/: the embedded files of
// web/ (plain HTML, CSS and JavaScript modules, no build step) with a
// strict Content-Security-Policy, the caller's identity for the console's
// sign-in, and one fan-in of watch streams for the service list. Every
// other call the console makes is the REST /v2 surface itself, with the
// same bearer token and the same roles.
package console

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed web
var webFS embed.FS

// Prefix is where the console is served.
const Prefix = "/ui/"

// asset is one embedded file with its validator.
type asset struct {
	body        []byte
	etag        string
	contentType string
}

// assets reads every embedded file once: the binary holds them, so their
// ETag (a content hash) never changes while it runs.
func assets() (map[string]asset, error) {
	out := map[string]asset{}
	err := fs.WalkDir(webFS, "web", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := webFS.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		ct := mime.TypeByExtension(path.Ext(p))
		if ct == "" {
			return fmt.Errorf("console asset %s: no content type for its extension", p)
		}
		out[strings.TrimPrefix(p, "web/")] = asset{body: body, etag: `"` + hex.EncodeToString(sum[:8]) + `"`, contentType: ct}
		return nil
	})
	return out, err
}

// contentSecurityPolicy allows only the console's own files: no inline
// script or style, no eval, no frames, no other origin, and DOM sinks
// that take strings (innerHTML) refused outright by Trusted Types.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; manifest-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; " +
	"require-trusted-types-for 'script'; trusted-types 'none'"

// setSecurityHeaders sets the headers every console answer carries.
func setSecurityHeaders(h http.Header, tls bool) {
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=(), payment=(), usb=()")
	if tls {
		h.Set("Strict-Transport-Security", "max-age=31536000")
	}
}

// files serves the embedded files under Prefix; Prefix itself is
// index.html. Revalidated on every load (no-cache with an ETag), so a new
// binary's console is picked up at once and an unchanged one costs a 304.
type files struct {
	byPath map[string]asset
}

func (f files) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	setSecurityHeaders(w.Header(), r.TLS != nil)
	name := strings.TrimPrefix(r.URL.Path, Prefix)
	if name == "" {
		name = "index.html"
	}
	a, ok := f.byPath[name]
	if !ok {
		http.Error(w, fmt.Sprintf("no console file %q: the console starts at %s", r.URL.Path, Prefix), http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", a.contentType)
	w.Header().Set("ETag", a.etag)
	w.Header().Set("Cache-Control", "no-cache")
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(a.body))
}
