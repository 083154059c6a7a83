// Package wire translates between the lifecycle domain's types and the
// generated messages they travel in: the inventory (stored, served, sent
// to the renderer), rendered documents, check results and pre-check
// reports. The domain (internal/lifecycle) imports no generated type; the
// adapters around it (internal/peers, internal/server, internal/storage,
// app) translate through here, so each translation is written once.
package wire

import (
	"fmt"
	"time"

	commonv1 "github.com/vcfsm/vcfsm/gen/vcfservices/common/v1"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// Inventory is the domain's inventory; a nil message is an empty inventory.
func Inventory(p *commonv1.Inventory) *lifecycle.Inventory {
	inv := &lifecycle.Inventory{}
	for _, r := range p.GetRegions() {
		region := lifecycle.Region{Name: r.GetName(), StorageClasses: r.GetStorageClasses()}
		for _, s := range r.GetSupervisors() {
			region.Supervisors = append(region.Supervisors, lifecycle.Supervisor{
				Name: s.GetName(), ID: s.GetId(), Version: s.GetVersion(), DefaultStorageClass: s.GetDefaultStorageClass(),
				VCenterName: s.GetVcenterName(), VCenterID: s.GetVcenterId(), KubernetesVersion: s.GetKubernetesVersion(),
				Kubeconfig: s.GetKubeconfig(), ManagementServices: managementServices(s.GetManagementServices()),
				Labels: s.GetLabels(), Window: window(s.GetMaintenanceWindow()),
			})
		}
		inv.Regions = append(inv.Regions, region)
	}
	return inv
}

func managementServices(p map[string]*commonv1.ManagementService) map[string]lifecycle.ManagementService {
	if p == nil {
		return nil
	}
	out := make(map[string]lifecycle.ManagementService, len(p))
	for name, ms := range p {
		m := lifecycle.ManagementService{Addresses: ms.GetAddresses(), CAChain: ms.GetCaChain()}
		if ms.GetPorts() != nil {
			m.Ports = make(map[string]lifecycle.ServicePort, len(ms.GetPorts()))
			for pn, port := range ms.GetPorts() {
				m.Ports[pn] = lifecycle.ServicePort{Port: port.GetPort(), Protocol: port.GetProtocol()}
			}
		}
		out[name] = m
	}
	return out
}

// InventoryProto is the generated message of an inventory; nil is empty.
func InventoryProto(inv *lifecycle.Inventory) *commonv1.Inventory {
	out := &commonv1.Inventory{}
	if inv == nil {
		return out
	}
	for _, r := range inv.Regions {
		region := &commonv1.Region{Name: r.Name, StorageClasses: r.StorageClasses}
		for _, s := range r.Supervisors {
			region.Supervisors = append(region.Supervisors, &commonv1.Supervisor{
				Name: s.Name, Id: s.ID, Version: s.Version, DefaultStorageClass: s.DefaultStorageClass,
				VcenterName: s.VCenterName, VcenterId: s.VCenterID, KubernetesVersion: s.KubernetesVersion,
				Kubeconfig: s.Kubeconfig, ManagementServices: managementServicesProto(s.ManagementServices),
				Labels: s.Labels, MaintenanceWindow: windowProto(s.Window),
			})
		}
		out.Regions = append(out.Regions, region)
	}
	return out
}

func managementServicesProto(m map[string]lifecycle.ManagementService) map[string]*commonv1.ManagementService {
	if m == nil {
		return nil
	}
	out := make(map[string]*commonv1.ManagementService, len(m))
	for name, ms := range m {
		p := &commonv1.ManagementService{Addresses: ms.Addresses, CaChain: ms.CAChain}
		if ms.Ports != nil {
			p.Ports = make(map[string]*commonv1.ServicePort, len(ms.Ports))
			for pn, port := range ms.Ports {
				p.Ports[pn] = &commonv1.ServicePort{Port: port.Port, Protocol: port.Protocol}
			}
		}
		out[name] = p
	}
	return out
}

// Documents are rendered documents in the domain's type.
func Documents(p []*commonv1.Resource) []*lifecycle.Document {
	if p == nil {
		return nil
	}
	out := make([]*lifecycle.Document, len(p))
	for i, r := range p {
		out[i] = &lifecycle.Document{
			APIVersion: r.GetApiVersion(), Kind: r.GetKind(), Name: r.GetName(), Labels: r.GetLabels(),
			Region: r.GetRegion(), Supervisor: r.GetSupervisor(), YAML: r.GetYaml(), Index: int(r.GetIndex()),
		}
	}
	return out
}

// DocumentsProto are rendered documents as the peers take them back.
func DocumentsProto(docs []*lifecycle.Document) []*commonv1.Resource {
	if docs == nil {
		return nil
	}
	out := make([]*commonv1.Resource, len(docs))
	for i, d := range docs {
		out[i] = &commonv1.Resource{
			ApiVersion: d.APIVersion, Kind: d.Kind, Name: d.Name, Labels: d.Labels,
			Region: d.Region, Supervisor: d.Supervisor, Yaml: d.YAML, Index: int32(d.Index),
		}
	}
	return out
}

// CheckResults are check results in the domain's type.
func CheckResults(p []*commonv1.CheckResult) []lifecycle.CheckResult {
	if p == nil {
		return nil
	}
	out := make([]lifecycle.CheckResult, len(p))
	for i, r := range p {
		out[i] = lifecycle.CheckResult{
			Severity: r.GetSeverity(), Kind: r.GetKind(), Expression: r.GetExpression(), CheckedVersion: r.GetCheckedVersion(),
			Subject: r.GetSubject(), Message: r.GetMessage(), Source: r.GetSource(),
		}
	}
	return out
}

// CheckResultsProto are check results as the REST surface shows them.
func CheckResultsProto(rs []lifecycle.CheckResult) []*commonv1.CheckResult {
	if rs == nil {
		return nil
	}
	out := make([]*commonv1.CheckResult, len(rs))
	for i, r := range rs {
		out[i] = &commonv1.CheckResult{
			Severity: r.Severity, Kind: r.Kind, Expression: r.Expression, CheckedVersion: r.CheckedVersion,
			Subject: r.Subject, Message: r.Message, Source: r.Source,
		}
	}
	return out
}

// PreCheckReport is a dynamic pre-check report in the domain's type.
func PreCheckReport(p *commonv1.PreCheckReport) *lifecycle.PreCheckReport {
	r := &lifecycle.PreCheckReport{Status: p.GetPreCheckStatus()}
	for _, rc := range p.GetResourceChecks() {
		c := lifecycle.ResourceCheck{Type: rc.GetType(), Name: rc.GetName(), Status: rc.GetStatus(), Supervisor: rc.GetSupervisor()}
		for _, ch := range rc.GetChecks() {
			c.Checks = append(c.Checks, lifecycle.Check{Name: ch.GetName(), Status: ch.GetStatus(), Message: ch.GetMessage()})
		}
		r.ResourceChecks = append(r.ResourceChecks, c)
	}
	return r
}

// ResourceChecksProto are a report's resource checks as the REST surface
// shows them (an empty list, never null).
func ResourceChecksProto(rcs []lifecycle.ResourceCheck) []*commonv1.ResourceCheck {
	out := []*commonv1.ResourceCheck{}
	for _, rc := range rcs {
		p := &commonv1.ResourceCheck{Type: rc.Type, Name: rc.Name, Status: rc.Status, Supervisor: rc.Supervisor}
		for _, c := range rc.Checks {
			p.Checks = append(p.Checks, &commonv1.Check{Name: c.Name, Status: c.Status, Message: c.Message})
		}
		out = append(out, p)
	}
	return out
}

// Bundle is a bundle's files as the peers take them.
func Bundle(b *bundle.Bundle) *commonv1.Bundle {
	pb := &commonv1.Bundle{Digest: b.Digest}
	for _, f := range b.Files {
		pb.Files = append(pb.Files, &commonv1.BundleFile{Path: f.Path, Content: f.Content})
	}
	return pb
}

// window is the domain's maintenance window. A duration that does not
// parse is kept as -1, which lifecycle.ValidateInventory refuses naming
// the field (the edge checks the text first: WindowDuration).
func window(p *commonv1.MaintenanceWindow) *lifecycle.MaintenanceWindow {
	if p == nil {
		return nil
	}
	d, err := WindowDuration(p.GetDuration())
	if err != nil {
		d = -1
	}
	return &lifecycle.MaintenanceWindow{Days: p.GetDays(), Start: p.GetStart(), Duration: d, TimeZone: p.GetTimeZone()}
}

// WindowDuration parses a maintenance window's duration ("4h", "90m").
func WindowDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("duration %q: want a Go duration such as 4h or 90m", s)
	}
	return d, nil
}

func windowProto(w *lifecycle.MaintenanceWindow) *commonv1.MaintenanceWindow {
	if w == nil {
		return nil
	}
	return &commonv1.MaintenanceWindow{Days: w.Days, Start: w.Start, Duration: w.Duration.String(), TimeZone: w.TimeZone}
}
