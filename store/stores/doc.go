// Package stores selects the table store every command uses, from one
// string (a flag, or the TABLEJOURNAL_TABLES environment variable):
//
//	""                      the embedded store, <data folder>/tables.db
//	sqlite:PATH             the embedded store in the file PATH
//	AccountName=…;…         an Azure Tables connection string (Azure
//	                        Storage, Cosmos DB Table API, Azurite;
//	                        UseDevelopmentStorage=true for a local Azurite)
//	https://host/…?sv=…     a table service URL carrying a SAS token
//	https://host/…          a bare table service URL: signs in with
//	                        Microsoft Entra ID (Auth sets how)
//
// Describe renders a spec for logs with its secrets replaced by ***.
package stores
