// Runs one SQL file with DuckDB in the current directory and prints the
// result rows as a JSON array (BIGINT and HUGEINT as strings, timestamps
// as ISO strings). Usage: node query.mjs FILE.sql
import { readFileSync } from 'node:fs';
import { DuckDBInstance } from '@duckdb/node-api';

const sql = readFileSync(process.argv[2], 'utf8');
const db = await DuckDBInstance.create(':memory:');
const conn = await db.connect();
const reader = await conn.runAndReadAll(sql);
process.stdout.write(JSON.stringify(reader.getRowObjectsJson()) + '\n');
