#!/bin/bash
# docker/mariadb/00-users.sh — the application's account, least privilege.
#
# The mariadb image sources /docker-entrypoint-initdb.d/* in name order on a
# fresh volume, against MARIADB_DATABASE (locklab): this file (00), then
# sql/schema.sql mounted as 10-schema.sql, then sql/seed.sql mounted as
# 20-seed.sql. The compose file does not set MARIADB_USER, because the
# image would grant that user ALL on the database; the server needs only
# rows, so it gets SELECT, INSERT, UPDATE, DELETE and no DDL, exactly as
# bench/stack grants it natively. '%' because the instances connect from
# other containers; the port is published on the host's loopback only. The
# password comes from LOCKLAB_MYSQL_PASSWORD and goes to the server on the
# client's standard input (docker_process_sql, the image's own helper).
docker_process_sql <<EOSQL
CREATE USER IF NOT EXISTS 'locklab'@'%' IDENTIFIED BY '${LOCKLAB_MYSQL_PASSWORD//\'/\'\'}';
GRANT SELECT, INSERT, UPDATE, DELETE ON locklab.* TO 'locklab'@'%';
EOSQL
