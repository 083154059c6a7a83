package app

import (
	"context"
	"fmt"
	"os"

	commonv1 "github.com/vcfsm/vcfsm/gen/vcfservices/common/v1"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/wire"
	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"
)

// loadInventoryFile replaces the stored inventory with the file's, when
// one is given.
func (s *Service) loadInventoryFile(ctx context.Context, file string) error {
	if file == "" {
		return nil
	}
	p, err := LoadInventory(file)
	if err != nil {
		return err
	}
	inv := wire.Inventory(p)
	if err := lifecycle.ValidateInventory(inv); err != nil {
		return fmt.Errorf("inventory file %s: %w", file, err)
	}
	if _, err := s.manager.PutInventory(ctx, inv); err != nil {
		return fmt.Errorf("inventory file %s: %w", file, err)
	}
	s.log.Info("platform inventory loaded", "file", file, "regions", len(inv.Regions))
	return nil
}

// LoadInventory reads api.md's Inventory from a YAML or JSON file.
func LoadInventory(file string) (*commonv1.Inventory, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("inventory file: %w", err)
	}
	js, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("inventory file %s: %w", file, err)
	}
	inv := &commonv1.Inventory{}
	if err := protojson.Unmarshal(js, inv); err != nil {
		return nil, fmt.Errorf("inventory file %s: %w", file, err)
	}
	return inv, nil
}
