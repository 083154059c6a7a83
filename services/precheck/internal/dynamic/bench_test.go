package dynamic

import (
	"context"
	"testing"
)

// BenchmarkRunDynamicPrechecks: a service of 60 resources, every element
// type and a Secret, with the bundle's images carried in the tarball (no
// registry round trips).
func BenchmarkRunDynamicPrechecks(b *testing.B) {
	kinds := []string{"SupervisorService", "UserInterfacePlugin", "SupervisorRegistry", "Overlay", "GlobalRole", "Role",
		"RightBundle", "VcfaServiceAccount", "VcServiceAccount", "ApiExtension", "ApiExtensionProxy", "RelyingParty", "RdeBundle", "Secret"}
	var docs []doc
	for len(docs) < 60 {
		for _, k := range kinds {
			docs = append(docs, doc{yaml: fixture(b, k)})
		}
	}
	req := request(b, docs[:60]...)
	c := NewChecker(Options{})
	for b.Loop() {
		report, err := c.Run(context.Background(), req)
		if err != nil {
			b.Fatal(err)
		}
		if len(report.GetResourceChecks()) != 60 {
			b.Fatalf("%d resource checks", len(report.GetResourceChecks()))
		}
	}
}
