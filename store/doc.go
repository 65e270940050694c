// Package store is the seam between tablejournal and a table store: the few
// operations the projector and the replay tools need from Azure Tables (a
// point read, a paged range query within a partition or across a table, an
// atomic transaction of conditional writes within one partition, and table
// management), with the semantics and limits of Azure Tables.
//
// Two backends implement Store and pass the one conformance suite in
// store/storetest: store/azure (Azure Storage, Cosmos DB for Table with its
// own limits and unsorted answers (docs/cosmos.md), Azurite) and
// store/sqlite (the embedded zero-setup default, one local file). The suite
// runs again through storetest.Shuffle, which answers pages unsorted as
// Cosmos does.
package store
