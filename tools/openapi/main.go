// Command openapi finishes the OpenAPI document protoc-gen-openapiv2
// writes for the REST surface (make generate runs it after buf), with what
// the generator cannot know from the protos:
//
//   - the status each route answers on success (PUT, PATCH, DELETE and
//     rollback answer 202 Accepted, not 200);
//   - every error status a route really answers, each with the one error
//     schema, whose code is documented as the gRPC code (the generator only
//     writes a "default" response);
//   - the routes whose success body is a YAML document (application/yaml
//     text, not the JSON wrapper message the gateway unwraps);
//   - the header naming the API version on every answer.
//
// Enums and required fields come from the generator itself, through
// proto/vcfservices/lifecycle/v1/lifecycle_openapi.yaml.
//
// Usage: openapi <lifecycle.swagger.json> (rewritten in place)
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: openapi <lifecycle.swagger.json>")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "openapi:", err)
		os.Exit(1)
	}
}

// route is what one operation (by operationId) answers beyond the
// generator's 200.
type route struct {
	// accepted: the success status is 202.
	accepted bool
	// yaml: the success body is a YAML document.
	yaml bool
	// stream: the success body is a stream of newline-delimited JSON.
	stream bool
	// errors are the statuses the route answers besides commonErrors.
	errors []int
	// required are the query parameters api.md requires (the generator
	// marks none: proto3 fields are all optional).
	required []string
}

// commonErrors are answered by every route: the gateway's guard (401,
// 403, 414, 429) and a lifecycle service that fails or is down (500, 503).
var commonErrors = []int{401, 403, 414, 429, 500, 503}

// routes lists every operation of the REST surface; run refuses a
// document with an operation missing here, so a new RPC cannot slip
// through undocumented.
var routes = map[string]route{
	"LifecycleService_CreateService":          {errors: []int{400, 409, 413}},
	"LifecycleService_ListServices":           {errors: []int{400}, required: []string{"page", "pageSize"}},
	"LifecycleService_GetService":             {errors: []int{400, 404}},
	"LifecycleService_UpdateService":          {accepted: true, errors: []int{400, 404, 409, 413}},
	"LifecycleService_PatchService":           {accepted: true, errors: []int{400, 404, 409, 413}},
	"LifecycleService_DeleteService":          {accepted: true, errors: []int{400, 404, 409}},
	"LifecycleService_GetServiceState":        {errors: []int{404}},
	"LifecycleService_GetServiceInventory":    {errors: []int{404}},
	"LifecycleService_GetServiceMetadata":     {errors: []int{400, 404}},
	"LifecycleService_GetServicePackage":      {yaml: true, errors: []int{400, 404}},
	"LifecycleService_RenderEffectiveValues":  {yaml: true, errors: []int{400, 404, 413}},
	"LifecycleService_RenderValueProvenance":  {errors: []int{400, 404, 413}},
	"LifecycleService_RenderResources":        {yaml: true, errors: []int{400, 404, 413}},
	"LifecycleService_RenderAccessGrants":     {errors: []int{400, 404, 413}},
	"LifecycleService_RollbackService":        {accepted: true, errors: []int{400, 404, 409, 413}},
	"LifecycleService_PreviewUpgrade":         {errors: []int{400, 404, 413}},
	"LifecycleService_ListServiceHistory":     {errors: []int{404}},
	"LifecycleService_WatchService":           {stream: true, errors: []int{400, 404}},
	"LifecycleService_RegisterServiceVersion": {errors: []int{400, 409, 413}},
	"LifecycleService_ListServiceVersions":    {},
	"LifecycleService_GetPlatformInventory":   {},
	"LifecycleService_PutPlatformInventory":   {errors: []int{400, 413}},
	"LifecycleService_CheckSupervisorUpgrade": {errors: []int{400, 404, 413}},
	"RolloutService_GetRollout":               {errors: []int{404}},
	"RolloutService_ApproveRollout":           {errors: []int{400, 404, 409, 413}},
	"RolloutService_PauseRollout":             {errors: []int{400, 404, 409, 413}},
	"RolloutService_ResumeRollout":            {errors: []int{400, 404, 409, 413}},
	"RolloutService_AbortRollout":             {errors: []int{400, 404, 409, 413}},
	"RolloutService_QuarantineVersion":        {errors: []int{400, 404, 413}},
	"RolloutService_ClearQuarantine":          {errors: []int{400, 404}},
	"RolloutService_GetRolloutStrategies":     {},
	"RolloutService_PutRolloutStrategies":     {errors: []int{400, 413}},
}

// errorText describes each error status.
var errorText = map[int]string{
	400: "Invalid input or lifecycle transition (code 3 INVALID_ARGUMENT or 9 FAILED_PRECONDITION); the message says what and where.",
	401: "Missing or invalid bearer token (code 16 UNAUTHENTICATED).",
	403: "The token's role may not make this call (code 7 PERMISSION_DENIED).",
	404: "No such service, operation or Supervisor (code 5 NOT_FOUND).",
	409: "A conflict: another operation is running or the revision moved (code 10 ABORTED), or what the request would create exists (code 6 ALREADY_EXISTS: the package has a service already).",
	413: "The request body exceeds the gateway's limit (--http-max-body-bytes).",
	414: "The query string exceeds the gateway's limit (--http-max-query-bytes).",
	429: "The caller exceeded its request rate or its open watch streams (code 8 RESOURCE_EXHAUSTED); Retry-After says when to retry.",
	500: "An internal error (code 13 INTERNAL); the server's log has the details.",
	503: "A service or the store is unavailable (code 14 UNAVAILABLE); retry later.",
}

const (
	identityHeader = "X-Vcfsm-Api-Version"
	errorSchema    = "rpcStatus"
)

type object = map[string]any

func run(path string) error {
	raw, err := os.ReadFile(path) //nolint:gosec // the generated document, named by the Makefile
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc object
	if err := dec.Decode(&doc); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := finish(doc); err != nil {
		return err
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	return os.WriteFile(path, out.Bytes(), 0o644) //nolint:gosec // a committed, generated file
}

// finish applies the route table to every operation and documents the
// error schema.
func finish(doc object) error {
	version, _ := objectAt(doc, "info")["version"].(string)
	paths := objectAt(doc, "paths")
	seen := map[string]bool{}
	for _, p := range sortedKeys(paths) {
		ops := objectAt(paths, p)
		for _, method := range sortedKeys(ops) {
			op := objectAt(ops, method)
			id, _ := op["operationId"].(string)
			r, ok := routes[id]
			if !ok {
				return fmt.Errorf("%s %s (%s) is not in the route table of tools/openapi: add it", strings.ToUpper(method), p, id)
			}
			seen[id] = true
			finishOperation(op, r, version)
		}
	}
	for id := range routes {
		if !seen[id] {
			return fmt.Errorf("the route table names %s, which the document does not have", id)
		}
	}
	describeError(objectAt(objectAt(doc, "definitions"), errorSchema))
	dropUnreferenced(doc)
	return nil
}

func finishOperation(op object, r route, version string) {
	if params, ok := op["parameters"].([]any); ok {
		for _, p := range params {
			param, _ := p.(object)
			name, _ := param["name"].(string)
			if param["in"] == "query" && slices.Contains(r.required, name) {
				param["required"] = true
			}
		}
	}
	responses := objectAt(op, "responses")
	delete(responses, "default")
	ok := objectAt(responses, "200")
	if r.yaml {
		op["produces"] = []any{"application/yaml", "application/json"}
		ok["schema"] = object{"type": "string", "description": "The YAML document (Content-Type: application/yaml)."}
	}
	if r.stream {
		ok["description"] = "Newline-delimited JSON, one object per line: {\"result\": …} per change, or, when the stream fails " +
			"after it started, {\"error\": …} as its last line. Errors before the stream starts are ordinary error answers."
	}
	if r.accepted {
		delete(responses, "200")
		ok["description"] = "Accepted: the change is recorded and the operation it implies has started; follow it with /watch, /state or /history."
		responses["202"] = ok
	}
	ok["headers"] = identity(version)
	errs := append(append([]int(nil), commonErrors...), r.errors...)
	sort.Ints(errs)
	for _, code := range errs {
		responses[strconv.Itoa(code)] = object{
			"description": errorText[code],
			"schema":      object{"$ref": "#/definitions/" + errorSchema},
			"headers":     identity(version),
		}
	}
}

func identity(version string) object {
	return object{identityHeader: object{
		"type":        "string",
		"description": "The REST API version the server speaks (" + version + "); every answer of the Service Manager carries it.",
	}}
}

// describeError documents the one error schema every error answer has.
func describeError(s object) {
	s["description"] = "Every error answer has this body; the HTTP status is the response's. A watch stream that fails after it " +
		"started sends it as {\"error\": …} on its last line."
	s["required"] = []any{"code", "message"}
	props := objectAt(s, "properties")
	objectAt(props, "code")["description"] = "The gRPC status code (google.rpc.Code), not the HTTP status: 3 INVALID_ARGUMENT, " +
		"5 NOT_FOUND, 6 ALREADY_EXISTS, 7 PERMISSION_DENIED, 8 RESOURCE_EXHAUSTED, 9 FAILED_PRECONDITION, 10 ABORTED, 13 INTERNAL, 14 UNAVAILABLE, " +
		"16 UNAUTHENTICATED."
	objectAt(props, "message")["description"] = "One sentence saying what was wrong and where."
	objectAt(props, "details")["description"] = "Structured details, when the server has any."
}

// dropUnreferenced removes definitions no operation reaches any more
// (the JSON wrappers of the YAML documents).
func dropUnreferenced(doc object) {
	defs := objectAt(doc, "definitions")
	reached := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch t := v.(type) {
		case object:
			if ref, ok := t["$ref"].(string); ok {
				name := strings.TrimPrefix(ref, "#/definitions/")
				if !reached[name] {
					reached[name] = true
					walk(defs[name])
				}
			}
			for _, k := range sortedKeys(t) {
				walk(t[k])
			}
		case []any:
			for _, e := range t {
				walk(e)
			}
		}
	}
	walk(doc["paths"])
	for name := range defs {
		if !reached[name] {
			delete(defs, name)
		}
	}
}

// objectAt returns m[key] as an object, creating it when absent.
func objectAt(m object, key string) object {
	if o, ok := m[key].(object); ok {
		return o
	}
	o := object{}
	m[key] = o
	return o
}

func sortedKeys(m object) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
