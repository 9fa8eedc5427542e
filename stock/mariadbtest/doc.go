// Package mariadbtest runs package stock's database side (SQLStore and the
// outbox consumer) against a real MariaDB server. It is its own module so
// that the MySQL driver it needs never enters the core module's go.mod;
// it contains tests only.
//
// The tests start mariadbd with their own datadir on a free port, and skip
// when it is not installed, unless CACHEGUARD_REQUIRE_MARIADB=1.
package mariadbtest
