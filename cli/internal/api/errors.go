package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"
)

// IdentityHeader is the header the Service Manager's gateway puts on every
// answer: the REST API version it speaks. An answer without it did not
// come from a Service Manager.
const IdentityHeader = "X-Vcfsm-Api-Version"

// APIMajor is the major version of the REST API this client speaks.
const APIMajor = "2"

// Error is a non-2xx answer of the Service Manager: its HTTP status, the
// gRPC code the body carries (-1 when it has none) and the message.
type Error struct {
	Status  int
	Code    int
	Message string
}

// Error is the server's message alone: the HTTP status is for programs.
func (e *Error) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("the server answered %d %s", e.Status, http.StatusText(e.Status))
	}
	return e.Message
}

// IsNotFound tells whether err is a 404 answer.
func IsNotFound(err error) bool { return statusOf(err) == http.StatusNotFound }

// IsUnauthorized tells whether err is a 401 answer.
func IsUnauthorized(err error) bool { return statusOf(err) == http.StatusUnauthorized }

// StatusOf is the HTTP status of an answer error, 0 for other errors.
func StatusOf(err error) int { return statusOf(err) }

func statusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// NotServiceManagerError says the server answered, but not as a Service
// Manager does: no identity header, or an answer it cannot read.
type NotServiceManagerError struct {
	Server string
	// Status and ContentType describe the answer.
	Status      int
	ContentType string
	// Why says what gave it away.
	Why string
}

func (e *NotServiceManagerError) Error() string {
	what := fmt.Sprintf("HTTP %d", e.Status)
	if e.ContentType != "" {
		what += ", " + e.ContentType
	}
	return fmt.Sprintf("%s does not answer as a VCF Service Manager (%s: %s): check the server address "+
		"(the REST port of the gateway, e.g. http://127.0.0.1:8080)", e.Server, what, e.Why)
}

// StreamClosedError is a watch stream the server ended before the client
// did: it stopped or restarted, or a proxy cut the connection.
type StreamClosedError struct {
	ID    string
	Cause string
}

func (e *StreamClosedError) Error() string {
	msg := fmt.Sprintf("the server closed the watch of %s", e.ID)
	if e.Cause != "" {
		msg += " (" + e.Cause + ")"
	}
	return msg + ": it may be stopping or restarting; run the command again to keep following the service (its operation goes on)"
}

// checkIdentity refuses an answer that does not carry the identity header
// of API version 2.
func (c *Client) checkIdentity(resp *http.Response) error {
	v := resp.Header.Get(IdentityHeader)
	ct := resp.Header.Get("Content-Type")
	if v == "" {
		return &NotServiceManagerError{Server: c.base, Status: resp.StatusCode, ContentType: ct, Why: "no " + IdentityHeader + " header"}
	}
	if major, _, _ := strings.Cut(v, "."); major != APIMajor {
		return fmt.Errorf("%s speaks REST API %s; this vcfctl speaks %s.x: use a vcfctl of the server's version", c.base, v, APIMajor)
	}
	return nil
}

// statusBody is google.rpc.Status as the gateway writes it; a watch
// stream wraps it in {"error": …}.
type statusBody struct {
	Code    *int   `json:"code"`
	Message string `json:"message"`
}

type envelope struct {
	statusBody
	Error *statusBody `json:"error"`
}

// errorOf reads an error answer (its identity already checked): the
// message of the body's status, in either envelope, else the body's text.
func errorOf(resp *http.Response, raw []byte) error {
	var env envelope
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt != "application/json" || json.Unmarshal(raw, &env) != nil {
		return &Error{Status: resp.StatusCode, Code: -1, Message: strings.TrimSpace(string(raw))}
	}
	st := env.statusBody
	if env.Error != nil {
		st = *env.Error
	}
	e := &Error{Status: resp.StatusCode, Code: -1, Message: strings.TrimSpace(st.Message)}
	if st.Code != nil {
		e.Code = *st.Code
	}
	return e
}
