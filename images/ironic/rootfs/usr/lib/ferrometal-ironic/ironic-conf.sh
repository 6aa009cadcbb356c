# shellcheck shell=bash disable=SC2153 # common.sh sets the *_FILE paths
# Writes ironic.conf from the environment (common.sh's contract, plus what only Ironic reads).
# Sourced after common.sh. Ironic reads OS_<GROUP>__<OPTION> variables itself (oslo.config's
# environment source), so spec.extraConfig needs nothing here, and wins over this file.
#   IRONIC_EXTERNAL_IP, IRONIC_EXTERNAL_CALLBACK_URL, IRONIC_EXTERNAL_HTTP_URL: what hosts use
#   DEPLOY_KERNEL_URL, DEPLOY_RAMDISK_URL, DEPLOY_{KERNEL,RAMDISK}_BY_ARCH: the agent's images
#   IRONIC_KERNEL_PARAMS, IRONIC_RAMDISK_SSH_KEY, IRONIC_IPA_COLLECTORS,
#   IRONIC_ENABLE_VLAN_INTERFACES: the ramdisk's kernel command line
#   IRONIC_CACERT_FILE (the CA of the API, for the ramdisk and JSON RPC clients),
#   WEBSERVER_CACERT_FILE (the CA of image servers), SEND_SENSOR_DATA
write_ironic_conf() {
  local ip host auth=noauth base callback http_url external_http='' api
  ip=$(provisioning_ip)
  host=$(url_host "$ip")
  mkdir -p "$IRONIC_CONF_DIR"
  # Behind httpd, httpd checks the credentials; otherwise Ironic does, against the htpasswd.
  if [ "$IRONIC_REVERSE_PROXY_SETUP" != true ] && write_htpasswd "$IRONIC_CONF_DIR/htpasswd"; then
    auth=http_basic
  fi
  base="$IRONIC_SCHEME://$(url_host "${IRONIC_EXTERNAL_IP:-$ip}"):$IRONIC_ACCESS_PORT"
  callback=${IRONIC_EXTERNAL_CALLBACK_URL:-$base}
  http_url="http://$host:$HTTP_PORT"
  if [ -n "${IRONIC_EXTERNAL_HTTP_URL:-}" ]; then
    external_http=$IRONIC_EXTERNAL_HTTP_URL
  elif [ "$VMEDIA_TLS_SETUP" = true ]; then
    external_http="https://$host:$VMEDIA_TLS_PORT"
  fi

  if [ "$IRONIC_REVERSE_PROXY_SETUP" = true ] && [ "$IRONIC_PRIVATE_PORT" = unix ]; then
    api="unix_socket = $SHARED/ironic.sock
unix_socket_mode = 0660"
  elif [ "$IRONIC_REVERSE_PROXY_SETUP" = true ]; then
    api="host_ip = 127.0.0.1
port = ${IRONIC_PRIVATE_PORT:-6388}"
  else
    local listen=$ip
    [ "$LISTEN_ALL_INTERFACES" != true ] || listen=$(any_address "$ip")
    api="host_ip = $listen
port = $IRONIC_LISTEN_PORT"
  fi

  local params=${IRONIC_KERNEL_PARAMS:-}
  [ -z "${IRONIC_RAMDISK_SSH_KEY:-}" ] || params="$params sshkey=\"$IRONIC_RAMDISK_SSH_KEY\""
  local inspect_params="ipa-inspection-collectors=${IRONIC_IPA_COLLECTORS:-default,logs}"
  [ -z "${IRONIC_ENABLE_VLAN_INTERFACES:-}" ] || inspect_params="$inspect_params ipa-enable-vlan-interfaces=$IRONIC_ENABLE_VLAN_INTERFACES"

  local rpc=none
  [ "$IRONIC_EXPOSE_JSON_RPC" != true ] || rpc=json-rpc

  {
    cat <<CONF
[DEFAULT]
auth_strategy = $auth
http_basic_auth_user_file = $IRONIC_CONF_DIR/htpasswd
rpc_transport = $rpc
host = $ip
my_ip = $ip
state_path = $STATE_DIR
use_stderr = true
debug = false
enabled_hardware_types = fake-hardware,redfish,ipmi
enabled_bios_interfaces = fake,no-bios,redfish
enabled_boot_interfaces = fake,redfish-virtual-media,redfish-https,ipxe,pxe
enabled_console_interfaces = fake,no-console
enabled_deploy_interfaces = fake,ramdisk,direct,custom-agent
enabled_firmware_interfaces = fake,no-firmware,redfish
enabled_inspect_interfaces = fake,no-inspect,redfish,agent
enabled_management_interfaces = fake,redfish,ipmitool
enabled_network_interfaces = noop
enabled_power_interfaces = fake,redfish,ipmitool
enabled_raid_interfaces = fake,no-raid,redfish,agent
enabled_rescue_interfaces = fake,no-rescue
enabled_storage_interfaces = fake,noop
enabled_vendor_interfaces = fake,no-vendor,redfish,ipmitool
default_network_interface = noop

[api]
$api
public_endpoint = $base

[conductor]
deploy_kernel = ${DEPLOY_KERNEL_URL:-file://$SHARED/html/images/ironic-python-agent.kernel}
deploy_ramdisk = ${DEPLOY_RAMDISK_URL:-file://$SHARED/html/images/ironic-python-agent.initramfs}
send_sensor_data = ${SEND_SENSOR_DATA:-false}
CONF
    [ -z "${DEPLOY_KERNEL_BY_ARCH:-}" ] || echo "deploy_kernel_by_arch = $DEPLOY_KERNEL_BY_ARCH"
    [ -z "${DEPLOY_RAMDISK_BY_ARCH:-}" ] || echo "deploy_ramdisk_by_arch = $DEPLOY_RAMDISK_BY_ARCH"
    [ -z "${WEBSERVER_CACERT_FILE:-}" ] || echo "webserver_verify_ca = $WEBSERVER_CACERT_FILE"
    cat <<CONF

[database]
connection = $(database_connection)

[dhcp]
dhcp_provider = none

[oslo_concurrency]
lock_path = $STATE_DIR/locks

[deploy]
http_root = $SHARED/html
http_url = $http_url
CONF
    [ -z "$external_http" ] || echo "external_http_url = $external_http"
    [ -z "${IRONIC_EXTERNAL_CALLBACK_URL:-}" ] || echo "external_callback_url = $IRONIC_EXTERNAL_CALLBACK_URL"
    cat <<CONF

[service_catalog]
endpoint_override = $callback

[agent]
deploy_logs_collect = always
deploy_logs_storage_backend = local
deploy_logs_local_path = $SHARED/log/ironic/deploy
CONF
    [ -z "${IRONIC_CACERT_FILE:-}" ] || echo "api_ca_file = $IRONIC_CACERT_FILE"
    cat <<CONF

[pxe]
kernel_append_params = nofb nomodeset vga=normal $params
tftp_root = $SHARED/tftpboot
tftp_master_path = $SHARED/tftpboot/master_images

[redfish]
kernel_append_params = nofb nomodeset vga=normal $params

[inspector]
extra_kernel_params = $inspect_params
CONF
    if [ "$rpc" = json-rpc ]; then
      local user password listen=$ip
      user=$(secret_value /auth/ironic-rpc/username)
      password=$(secret_value /auth/ironic-rpc/password)
      [ "$LISTEN_ALL_INTERFACES" != true ] || listen=$(any_address "$ip")
      # The JSON RPC server checks the same htpasswd as the API; clients send the API's
      # credentials.
      write_htpasswd "$IRONIC_CONF_DIR/htpasswd-rpc" || true
      cat <<CONF

[json_rpc]
host_ip = $listen
port = $IRONIC_JSON_RPC_PORT
auth_strategy = http_basic
http_basic_auth_user_file = $IRONIC_CONF_DIR/htpasswd-rpc
auth_type = http_basic
username = $user
password = $password
use_ssl = $IRONIC_TLS_SETUP
CONF
      if [ "$IRONIC_TLS_SETUP" = true ]; then
        echo "cert_file = $IRONIC_CERT_FILE"
        echo "key_file = $IRONIC_KEY_FILE"
        [ -z "${IRONIC_CACERT_FILE:-}" ] || echo "cafile = $IRONIC_CACERT_FILE"
      fi
    fi
    if [ "${SEND_SENSOR_DATA:-false}" = true ]; then
      cat <<CONF

[oslo_messaging_notifications]
driver = prometheus_exporter
location = $SHARED/ironic_prometheus_exporter
transport_url = fake://
CONF
    fi
  } >"$IRONIC_CONF.new"
  chmod 0600 "$IRONIC_CONF.new"
  mv "$IRONIC_CONF.new" "$IRONIC_CONF"
}
