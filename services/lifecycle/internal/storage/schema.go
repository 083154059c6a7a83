// Package storage keeps the lifecycle service's entities in a store.Store.
// Every bucket the service uses is declared here, with the schema version.
package storage

import "github.com/vcfsm/vcfsm/platform/store"

// Buckets of the lifecycle service.
const (
	// BucketServices holds one Service entity per id.
	BucketServices = "services"
)

// Schema is the lifecycle service's store layout. Bump Version and append a
// migration when the stored shape changes.
var Schema = store.Schema{
	Version: 1,
	Buckets: []string{
		BucketServices,
	},
}
