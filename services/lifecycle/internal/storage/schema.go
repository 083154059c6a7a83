// Package storage keeps the lifecycle service's entities in a store.Store.
// Every bucket the service uses is declared here, with the schema version.
package storage

import "github.com/vcfsm/vcfsm/platform/store"

// Buckets of the lifecycle service.
const (
	// BucketServices: one Service per id.
	BucketServices = "services"
	// BucketResources: "<service id>|<resource id>" → Resource.
	BucketResources = "resources"
	// BucketOperations: "<service id>|<operation id>" → Operation. Kept
	// after a service is deleted: it is the service's history.
	BucketOperations = "operations"
	// BucketCatalog: "<name>|<version>" → CatalogEntry.
	BucketCatalog = "catalog"
	// BucketPlatform: singletons such as the platform inventory.
	BucketPlatform = "platform"
	// BucketBundles: "<digest>" → a bundle archive's manifest and
	// "<digest>#<n>" → its chunks (bundles.go), so every replica reaches
	// every bundle. Adding the bucket needs no migration: stores create
	// declared buckets when they open.
	BucketBundles = "bundles"
)

// Schema is the lifecycle service's store layout. Bump Version and append a
// migration when the stored shape changes.
var Schema = store.Schema{
	Version: 1,
	Buckets: []string{
		BucketServices,
		BucketResources,
		BucketOperations,
		BucketCatalog,
		BucketPlatform,
		BucketBundles,
	},
}
