package auth

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Role is what a token may do. Every token carries exactly one.
type Role string

// The roles, from most to least powerful; service is apart: it may call
// only the internal RPCs services make to each other.
const (
	// RoleAdmin may do everything.
	RoleAdmin Role = "admin"
	// RoleOperator runs the service lifecycle: create, change, upgrade,
	// roll back, delete, register versions, and everything a viewer may.
	RoleOperator Role = "operator"
	// RoleViewer reads: services, state, history, watch, inventory, and the
	// renders and previews that change nothing.
	RoleViewer Role = "viewer"
	// RoleService is the token services send each other; the REST edge
	// refuses it.
	RoleService Role = "service"
)

// Roles lists every role.
var Roles = []Role{RoleAdmin, RoleOperator, RoleViewer, RoleService}

// ParseRole accepts a role name.
func ParseRole(s string) (Role, error) {
	for _, r := range Roles {
		if strings.TrimSpace(s) == string(r) {
			return r, nil
		}
	}
	return "", fmt.Errorf("unknown role %q: want admin, operator, viewer or service", s)
}

// Permission names one kind of call; 403 answers name the missing one.
type Permission string

// The permissions.
const (
	// PermRead: reads, watches, and renders or previews that change nothing.
	PermRead Permission = "services.read"
	// PermWrite: create, replace, patch, delete, roll back, register versions.
	PermWrite Permission = "services.write"
	// PermInventoryWrite: replace the platform inventory.
	PermInventoryWrite Permission = "inventory.write"
	// PermInternal: the RPCs services make to each other.
	PermInternal Permission = "internal.call"
	// PermREST: calling the REST edge at all (every role but service).
	PermREST Permission = "rest.access"
	// PermAdmin: anything not listed in the method table.
	PermAdmin Permission = "admin"
)

var grants = map[Role][]Permission{
	RoleAdmin:    {PermRead, PermWrite, PermInventoryWrite, PermInternal, PermREST, PermAdmin},
	RoleOperator: {PermRead, PermWrite, PermREST},
	RoleViewer:   {PermRead, PermREST},
	RoleService:  {PermInternal},
}

// Has reports whether role grants p.
func (r Role) Has(p Permission) bool {
	for _, g := range grants[r] {
		if g == p {
			return true
		}
	}
	return false
}

const (
	lifecycleSvc = "/vcfservices.lifecycle.v1.LifecycleService/"
	rolloutSvc   = "/vcfservices.lifecycle.v1.RolloutService/"
)

// methodPermissions maps gRPC methods to the permission they need. Whole
// internal services are matched by prefix in MethodPermission; a method in
// neither needs PermAdmin, so a new RPC is admin-only until listed here.
var methodPermissions = map[string]Permission{
	lifecycleSvc + "CreateService":          PermWrite,
	lifecycleSvc + "UpdateService":          PermWrite,
	lifecycleSvc + "PatchService":           PermWrite,
	lifecycleSvc + "DeleteService":          PermWrite,
	lifecycleSvc + "RollbackService":        PermWrite,
	lifecycleSvc + "RegisterServiceVersion": PermWrite,
	lifecycleSvc + "PutPlatformInventory":   PermInventoryWrite,
	lifecycleSvc + "ListServices":           PermRead,
	lifecycleSvc + "GetService":             PermRead,
	lifecycleSvc + "GetServiceState":        PermRead,
	lifecycleSvc + "GetServiceInventory":    PermRead,
	lifecycleSvc + "GetServiceMetadata":     PermRead,
	lifecycleSvc + "GetServicePackage":      PermRead,
	lifecycleSvc + "RenderEffectiveValues":  PermRead,
	lifecycleSvc + "RenderValueProvenance":  PermRead,
	lifecycleSvc + "RenderResources":        PermRead,
	lifecycleSvc + "RenderAccessGrants":     PermRead,
	lifecycleSvc + "PreviewUpgrade":         PermRead,
	lifecycleSvc + "ListServiceHistory":     PermRead,
	lifecycleSvc + "WatchService":           PermRead,
	lifecycleSvc + "ListServiceVersions":    PermRead,
	lifecycleSvc + "GetPlatformInventory":   PermRead,
	lifecycleSvc + "CheckSupervisorUpgrade": PermRead,
	// Rollouts: approve, abort, quarantine, clear and the provider's
	// strategies are an administrator's (PermAdmin, by not being listed).
	rolloutSvc + "GetRollout":           PermRead,
	rolloutSvc + "GetRolloutStrategies": PermRead,
	rolloutSvc + "PauseRollout":         PermWrite,
	rolloutSvc + "ResumeRollout":        PermWrite,
}

// fieldPermissions are request fields that need more than their method's
// permission, by the path of proto field names from the request message.
// A field counts as set when it is present (a message) or not its zero
// value (a scalar): builtIn:false needs nothing. Checked on every call of
// the method, gRPC and REST alike (the gateway calls the same RPC).
var fieldPermissions = map[string][]fieldRule{
	// builtIn skips every compatibility constraint (seed 002: built-in
	// services are compatible by default): only an administrator says so.
	lifecycleSvc + "CreateService":          {{"built_in", PermAdmin}},
	lifecycleSvc + "RegisterServiceVersion": {{"built_in", PermAdmin}},
	// An override lets one operation through check ERRORs.
	lifecycleSvc + "PatchService":  {{"service.override", PermAdmin}},
	lifecycleSvc + "UpdateService": {{"service.override", PermAdmin}},
}

type fieldRule struct {
	path string // dot-separated proto field names
	perm Permission
}

// AuthorizeFields refuses a caller whose role lacks the permission of a
// field the request sets, naming the field (by its JSON name) and the
// permission.
func AuthorizeFields(id Identity, fullMethod string, req any) error {
	rules := fieldPermissions[fullMethod]
	if len(rules) == 0 {
		return nil
	}
	m, ok := req.(proto.Message)
	if !ok {
		return nil
	}
	for _, r := range rules {
		name, set := fieldSet(m.ProtoReflect(), strings.Split(r.path, "."))
		if set && !id.Role.Has(r.perm) {
			return fmt.Errorf("%s is an administrator's: permission %s missing: principal %q has role %s", name, r.perm, id.Principal, id.Role)
		}
	}
	return nil
}

// fieldSet reports whether the field at path is set in m, and its JSON
// name (the name a REST body uses).
func fieldSet(m protoreflect.Message, path []string) (string, bool) {
	for i, p := range path {
		fd := m.Descriptor().Fields().ByName(protoreflect.Name(p))
		if fd == nil || !m.Has(fd) {
			return p, false
		}
		if i == len(path)-1 {
			return fd.JSONName(), true
		}
		if fd.Message() == nil {
			return p, false
		}
		m = m.Get(fd).Message()
	}
	return "", false
}

// internalServices are called only by other services.
var internalServices = []string{
	"/vcfservices.compatibility.v1.CompatibilityService/",
	"/vcfservices.renderer.v1.RendererService/",
	"/vcfservices.precheck.v1.PrecheckService/",
	// The simulator server: every lifecycle replica calls it with the
	// service token.
	"/vcfservices.target.v1.TargetService/",
}

// MethodPermission is the permission a gRPC method needs.
func MethodPermission(fullMethod string) Permission {
	if p, ok := methodPermissions[fullMethod]; ok {
		return p
	}
	for _, prefix := range internalServices {
		if strings.HasPrefix(fullMethod, prefix) {
			return PermInternal
		}
	}
	return PermAdmin
}

// Authorize refuses a caller whose role lacks the method's permission,
// naming the permission.
func Authorize(id Identity, fullMethod string) error {
	return Require(id, MethodPermission(fullMethod))
}

// Require refuses a caller whose role lacks p, naming p.
func Require(id Identity, p Permission) error {
	if id.Role.Has(p) {
		return nil
	}
	return fmt.Errorf("permission %s missing: principal %q has role %s", p, id.Principal, id.Role)
}
