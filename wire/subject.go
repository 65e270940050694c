package wire

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrBadSubject marks a subject or pk-token that is not of the journal's
// form; checked with errors.Is.
var ErrBadSubject = errors.New("malformed journal subject")

// emptyPKToken stands for the empty partition key, which Azure allows but
// which would leave an empty subject token. "=" is never the output of
// unpadded base64url.
const emptyPKToken = "="

// PKToken returns the subject token of a partition key: the key in
// unpadded base64url (RFC 4648 §5), or "=" for the empty key.
func PKToken(pk string) string {
	if pk == "" {
		return emptyPKToken
	}
	return base64.RawURLEncoding.EncodeToString([]byte(pk))
}

// ParsePKToken is the inverse of PKToken.
func ParsePKToken(tok string) (string, error) {
	if tok == emptyPKToken {
		return "", nil
	}
	if tok == "" {
		return "", fmt.Errorf("%w: empty pk-token", ErrBadSubject)
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(tok)
	if err != nil {
		return "", fmt.Errorf("%w: pk-token %q is not unpadded base64url", ErrBadSubject, tok)
	}
	return string(b), nil
}

// TableToken returns the subject token of a table name: the name in lower
// case. Table names are case-insensitive (Azure's, and every store's), so
// "caseT" and "CASET" are one table; their commands must share one subject
// and so one shard, or two shards could apply them out of order. A table
// name is ASCII ([A-Za-z][A-Za-z0-9]{2,62}); other bytes are left as they
// are.
func TableToken(table string) string {
	for i := 0; i < len(table); i++ {
		if c := table[i]; 'A' <= c && c <= 'Z' {
			b := []byte(table)
			for j := i; j < len(b); j++ {
				if c := b[j]; 'A' <= c && c <= 'Z' {
					b[j] = c + 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return table
}

// SubjectHoldsTable reports whether token, the table token of a stored
// journal subject, is table's: TableToken(table), or table as spelled,
// the form journals written before the token was canonical hold.
func SubjectHoldsTable(token, table string) bool {
	return token == TableToken(table) || token == table
}

// JournalSubject returns the subject a client publishes a command to:
// journal.<table-token>.<pk-token>. The stream stores it as
// journal.<table-token>.<shard>.<pk-token>.
func JournalSubject(table, pk string) string {
	table = TableToken(table)
	if pk == "" {
		return JournalPrefix + "." + table + "." + emptyPKToken
	}
	enc := base64.RawURLEncoding
	b := make([]byte, 0, len(JournalPrefix)+len(table)+2+enc.EncodedLen(len(pk)))
	b = append(b, JournalPrefix...)
	b = append(b, '.')
	b = append(b, table...)
	b = append(b, '.')
	b = enc.AppendEncode(b, []byte(pk))
	return string(b)
}

// ParseJournalSubject splits a stored subject
// journal.<table-token>.<shard>.<pk-token>. table is the token as stored:
// lower case, or the table as spelled in journals written before
// (SubjectHoldsTable).
func ParseJournalSubject(stored string) (table string, shard int, pk string, err error) {
	parts := strings.Split(stored, ".")
	if len(parts) != 4 || parts[0] != JournalPrefix || parts[1] == "" {
		return "", 0, "", fmt.Errorf("%w: %q is not journal.<table>.<shard>.<pk-token>", ErrBadSubject, stored)
	}
	shard, err = strconv.Atoi(parts[2])
	if err != nil || shard < 0 || strconv.Itoa(shard) != parts[2] {
		return "", 0, "", fmt.Errorf("%w: %q has no shard number", ErrBadSubject, stored)
	}
	pk, err = ParsePKToken(parts[3])
	if err != nil {
		return "", 0, "", fmt.Errorf("subject %q: %w", stored, err)
	}
	return parts[1], shard, pk, nil
}

// ShardFilter returns the subject filter that selects every command stored
// in shard, for a consumer per shard (ConsumerName).
func ShardFilter(shard int) string {
	return JournalPrefix + ".*." + strconv.Itoa(shard) + ".*"
}

// TableFilter returns the subject filter that selects every command of
// table, in every shard.
func TableFilter(table string) string {
	return JournalPrefix + "." + TableToken(table) + ".*.*"
}

// TableFilters returns TableFilter(table) and, when table has upper-case
// letters, the filter of table as spelled: journals written before the
// table token was canonical hold its commands there.
func TableFilters(table string) []string {
	return withLegacy(TableFilter(table), table, func(t string) string { return JournalPrefix + "." + t + ".*.*" })
}

// PartitionFilter returns the subject filter that selects every command of
// one partition, wherever it is sharded.
func PartitionFilter(table, pk string) string {
	return JournalPrefix + "." + TableToken(table) + ".*." + PKToken(pk)
}

// PartitionFilters is PartitionFilter with the legacy filter, as
// TableFilters.
func PartitionFilters(table, pk string) []string {
	return withLegacy(PartitionFilter(table, pk), table, func(t string) string { return JournalPrefix + "." + t + ".*." + PKToken(pk) })
}

func withLegacy(canonical, table string, filter func(table string) string) []string {
	if TableToken(table) == table {
		return []string{canonical}
	}
	return []string{canonical, filter(table)}
}
