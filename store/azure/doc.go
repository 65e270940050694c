// Package azure is the store.Store backend for Azure Tables: Azure Storage,
// the Cosmos DB Table API and the Azurite emulator, through the aztables SDK.
//
//	s, err := azure.New(azure.Config{ConnectionString: os.Getenv("TABLEJOURNAL_TABLES")})
//
// # Authentication
//
// A connection string's AccountKey signs each request with the key; a SAS
// token (SharedAccessSignature, or an Endpoint's query) is sent as it is;
// an Endpoint with neither signs in with Microsoft Entra ID: Config.Credential,
// or azidentity's DefaultAzureCredential, and a bearer token for
// https://storage.azure.com (https://cosmos.azure.com for Cosmos DB), over
// https only. Config.Auth forces one of the three. internal/azauth decides
// and builds the credential and the transport (Config.CAFile,
// SSL_CERT_FILE); refusals a user can act on (an account that allows no
// keys, an identity without Storage Table Data Contributor, a refused
// token) carry what to do and unwrap to azauth's sentinels.
//
//	s, err := azure.New(azure.Config{Endpoint: "https://myaccount.table.core.windows.net", Credential: cred})
//
// # Entities
//
// Entities travel as JSON with minimal metadata. Every value that JSON cannot
// type by itself carries its @odata.type annotation (Int64 as a decimal
// string, DateTime with 7 fractional digits, Guid, Binary in base64, Double
// always annotated so that 5.0 stays a Double and NaN and ±Infinity travel as
// strings). Responses are parsed from the raw body rather than from the
// SDK's decoded maps, which turn 5.0 into 5 and would read a Double back as
// an Int32.
//
// # Errors and retries
//
// Service errors map to the store sentinels by error code, then by HTTP
// status (404, 409, 412, 413, 400; 408, 429, 500, 503 and 504 are ErrBusy).
// Transient statuses are retried by the SDK's own retry policy (azcore
// policy.RetryOptions restricted to 408/429/500/503/504, exponential backoff
// with jitter, Retry-After honoured), not by an outer backoff loop: it sits
// at the HTTP layer, rewinds request bodies, retries dropped connections and
// reads the service's retry hints, and a second loop around it would
// multiply the attempts. 409 and 412 are never retried. Note that a
// transaction retried after a 5xx may already have committed: its retry then
// fails with ErrExists or ErrPrecondition, which the projector resolves from
// the rows' journal sequence.
//
// Errors never carry secrets: they are built from the operation, the status,
// the error code and the first line of the service's message, and transport
// errors have the request URL's query (where a SAS signature lives) removed.
//
// # Transactions
//
// Transact validates with store.ValidateTx before sending, so that both
// backends refuse the same things and Azurite's laxness (it accepts entities
// over 1 MiB, over 252 properties, and batches spanning partitions,
// Azure/Azurite#1215) never shows. It then submits one entity-group
// transaction with the SDK's SubmitTransaction. When the service refuses it,
// the SDK reports only the outer HTTP 202; the inner multipart response is
// parsed here for the failed operation's index ("3:The specified entity
// already exists.") and error code, and the error is a *store.TxError.
//
// Two bugs of aztables v1.4.1 are worked around (batchkeys.go): it refuses
// an empty PartitionKey in the URL of a batch operation, and it does not
// double the single quotes of keys in those URLs. Such keys go to the SDK as
// placeholders that a pipeline policy replaces in the finished batch body.
//
// # Queries
//
// Query builds an OData filter from the partition, the RowKey range and the
// conditions, all values escaped and typed (datetime'…', guid'…', X'…',
// 123L), and follows NextPartitionKey/NextRowKey continuations, through
// empty pages, until a page holds an entity or the range ends (a
// continuation into the partition with the empty key comes from Azurite
// without NextPartitionKey, which is then sent empty). Partitions lists a
// table's partitions with a skip scan: $top=1 and PartitionKey gt the last
// one, selecting only the keys. Conditions
// are pushed to the server where the server's comparison agrees with
// store.MatchFilter, and every page is filtered again with store.MatchFilter,
// so the result is the same as the embedded store's whatever the server
// coerces. Against Azurite (the devstoreaccount1 account, or
// Config.Emulator) Int64 conditions stay on the client, see buildFilter.
package azure
