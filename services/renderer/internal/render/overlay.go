package render

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"carvel.dev/ytt/pkg/yamlmeta"

	rendererv1 "github.com/vcfsm/vcfsm/gen/vcfservices/renderer/v1"
)

// Overlay application modes and the target statuses runtime-spec.md
// defines for them.
const (
	ModeEager = "eager"
	ModeLazy  = "lazy"

	StatusHealthy   = "Healthy"
	StatusBusy      = "Busy"
	StatusUnhealthy = "Unhealthy"

	OverlayLabel = "services.vcfa.broadcom.com/overlay"
)

// The messages runtime-spec.md shows for each outcome.
const (
	msgDeployedBase   = "Deployed with base configuration"
	msgOverlayApplied = "Overlay applied successfully"
	msgOverlayFailed  = "Failed to apply overlay: ytt transformation failed: "
)

// WaitingMessage is the Busy message of a target whose eager overlay is not
// ready.
func WaitingMessage(name string) string {
	return fmt.Sprintf("Waiting for overlay: Overlay secret '%s' not found or not ready (mode: eager). "+
		"The Overlay CR with label '%s=%s' must exist and have status=Healthy. Will retry in 10s.", name, OverlayLabel, name)
}

// FailedMessage is the Unhealthy message of a target whose overlay failed.
func FailedMessage(reason string) string {
	return msgOverlayFailed + reason
}

// Runtime-spec file names in the overlay's ytt run, as runtime-spec.md's
// troubleshooting section names them.
const (
	runtimeSpecFile = "base.yml"
	overlayFile     = "overlay.yml"
)

// ApplyOverlay applies an Overlay's ytt template to a target's runtime
// spec (runtime-spec.md). A template that fails is not an error of the
// call: the target becomes Unhealthy with ytt's message. runtime_spec_yaml
// is set exactly when the target may be deployed with it.
func ApplyOverlay(req *rendererv1.ApplyOverlayRequest) (*rendererv1.ApplyOverlayResponse, error) {
	mode := req.GetMode()
	if mode == "" {
		mode = ModeEager
	}
	if mode != ModeEager && mode != ModeLazy {
		return nil, invalid(LayerRequest, "mode", "%q is not an overlay-apply mode: use eager or lazy", req.GetMode())
	}
	if req.GetOverlayName() == "" {
		return nil, invalid(LayerRequest, "overlayName", "required: the %s label value linking the target and the Overlay", OverlayLabel)
	}
	if err := checkRuntimeSpec(req.GetRuntimeSpecYaml()); err != nil {
		return nil, err
	}

	if !req.GetOverlayReady() {
		if mode == ModeEager {
			return &rendererv1.ApplyOverlayResponse{Status: StatusBusy, Message: WaitingMessage(req.GetOverlayName())}, nil
		}
		return &rendererv1.ApplyOverlayResponse{
			RuntimeSpecYaml: req.GetRuntimeSpecYaml(),
			Status:          StatusHealthy,
			Message:         msgDeployedBase,
		}, nil
	}
	if strings.TrimSpace(req.GetOverlay()) == "" {
		return nil, invalid(LayerRequest, "overlay", "required when the overlay is ready: the Overlay's spec.overlay ytt template")
	}

	spec, err := transform(req)
	if err != nil {
		return &rendererv1.ApplyOverlayResponse{Status: StatusUnhealthy, Message: FailedMessage(Reason(err))}, nil
	}
	return &rendererv1.ApplyOverlayResponse{RuntimeSpecYaml: spec, Applied: true, Status: StatusHealthy, Message: msgOverlayApplied}, nil
}

func checkRuntimeSpec(data []byte) error {
	docSet, err := parseYAML(runtimeSpecFile, data)
	if err != nil {
		return invalid(LayerRuntimeSpec, "", "invalid YAML: %v", err)
	}
	docs := outputDocuments(docSet)
	if len(docs) != 1 {
		return invalid(LayerRuntimeSpec, "", "expected one YAML document, got %d", len(docs))
	}
	if _, ok := docs[0].Value.(*yamlmeta.Map); !ok {
		return invalid(LayerRuntimeSpec, "", "expected a map, got %s", yamlmeta.TypeName(docs[0].Value))
	}
	return nil
}

// transform is `ytt -f base.yml -f overlay.yml` with the resolved values
// as data values; base.yml is plain YAML, never a template.
func transform(req *rendererv1.ApplyOverlayRequest) ([]byte, error) {
	lib, err := newLibrary(LayerOverlay, []source{
		{path: runtimeSpecFile, data: req.GetRuntimeSpecYaml(), plain: true},
		{path: overlayFile, data: []byte(withDataModule(req.GetOverlay()))},
	})
	if err != nil {
		return nil, err
	}
	values := newDocument(goNode(req.GetValues().AsMap()))
	out, err := lib.run(values)
	if err != nil {
		return nil, err
	}
	docs := outputDocuments(out)
	if len(docs) != 1 {
		return nil, fmt.Errorf("the overlay left %d documents; it must transform the one runtime spec", len(docs))
	}
	return yamlText(docs[0])
}

var (
	loadsData = regexp.MustCompile(`load\(\s*"@ytt:data"`)
	firstLoad = regexp.MustCompile(`^#@ load\(`)
)

// withDataModule makes `data` available to an Overlay template. The
// templates of runtime-spec.md and overlay.md use data.values without
// loading @ytt:data, which plain ytt rejects ("undefined: data"). When the
// template starts with a load, the renderer adds data's to that line, so
// that ytt's line numbers still match the template; otherwise it adds a
// line of its own on top.
func withDataModule(template string) string {
	if loadsData.MatchString(template) {
		return template
	}
	const load = `load("@ytt:data", "data")`
	if firstLoad.MatchString(template) {
		return "#@ " + load + "; " + strings.TrimPrefix(template, "#@ ")
	}
	return "#@ " + load + "\n" + template
}

// Reason is an error's message without the layer prefix.
func Reason(err error) string {
	var e *Error
	if errors.As(err, &e) {
		parts := make([]string, 0, len(e.Violations))
		for _, v := range e.Violations {
			if v.Path != "" {
				parts = append(parts, v.Path+": "+v.Rule)
				continue
			}
			parts = append(parts, v.Rule)
		}
		return strings.Join(parts, "; ")
	}
	return err.Error()
}
