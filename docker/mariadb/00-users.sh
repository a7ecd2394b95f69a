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
# locklab_exporter is the mysqld exporter's (the compose file's prometheus
# profile): it reads the server's status and processes, never a row, and
# shares the password, which gives nobody anything the locklab account
# does not already allow.
docker_process_sql <<EOSQL
CREATE USER IF NOT EXISTS 'locklab'@'%' IDENTIFIED BY '${LOCKLAB_MYSQL_PASSWORD//\'/\'\'}';
GRANT SELECT, INSERT, UPDATE, DELETE ON locklab.* TO 'locklab'@'%';
CREATE USER IF NOT EXISTS 'locklab_exporter'@'%' IDENTIFIED BY '${LOCKLAB_MYSQL_PASSWORD//\'/\'\'}'
    WITH MAX_USER_CONNECTIONS 3;
GRANT PROCESS, SLAVE MONITOR ON *.* TO 'locklab_exporter'@'%';
EOSQL
