package lifecyclev1

import _ "embed"

// OpenAPIJSON is the OpenAPI v2 document protoc-gen-openapiv2 generates for
// the REST surface; the gateway serves it at /v2/openapi.json.
//
//go:embed lifecycle.swagger.json
var OpenAPIJSON []byte
