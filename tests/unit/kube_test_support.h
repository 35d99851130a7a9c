#pragma once
// Test doubles for the HTTP Kubernetes adapter: a scripted API server on 127.0.0.1 (plain HTTP
// or HTTPS), a throwaway PKI made with OpenSSL at test time, and a scratch directory to write in.
#include <httplib.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/scratch_dir.h"

namespace stsresize::testing {

struct RecordedRequest {
  std::string method;
  std::string target;  // path and query exactly as sent
  std::string path;    // decoded path
  httplib::Headers headers;
  httplib::Params params;  // decoded query
  std::string body;

  std::string header(const std::string& name) const {
    const auto it = headers.find(name);
    return it == headers.end() ? std::string{} : it->second;
  }
};

struct ScriptedAnswer {
  int status = 200;
  std::string body = "{}";
  httplib::Headers headers;
};

// Answers every request with the current scripted answer and records it.
class StubApiServer {
 public:
  explicit StubApiServer(
      std::unique_ptr<httplib::Server> server = std::make_unique<httplib::Server>())
      : server_(std::move(server)) {
    if (!server_->is_valid()) throw std::runtime_error("stub server: invalid (TLS setup?)");
    const auto handler = [this](const httplib::Request& request, httplib::Response& response) {
      ScriptedAnswer answer;
      {
        std::unique_lock lock(mutex_);
        requests_.push_back(RecordedRequest{request.method, request.target, request.path,
                                            request.headers, request.params, request.body});
        answer = answer_;
        if (hold_) released_.wait(lock, [this] { return !hold_; });
      }
      response.status = answer.status;
      for (const auto& [name, value] : answer.headers) response.set_header(name, value);
      response.set_content(answer.body, "application/json");
    };
    server_->Get(".*", handler);
    server_->Post(".*", handler);
    server_->Put(".*", handler);
    server_->Patch(".*", handler);
    server_->Delete(".*", handler);
    server_->set_tcp_nodelay(true);  // as the API server (Go) does
    port_ = server_->bind_to_any_port("127.0.0.1");
    if (port_ <= 0) throw std::runtime_error("stub server: cannot bind 127.0.0.1");
    thread_ = std::thread([this] { server_->listen_after_bind(); });
    // stop() is a no-op until the accept loop runs: wait for it, or teardown could hang.
    while (!server_->is_running()) std::this_thread::yield();
  }

  ~StubApiServer() {
    release();
    server_->stop();
    thread_.join();
  }

  int port() const { return port_; }
  std::string url(bool tls = false) const {
    return std::string{tls ? "https" : "http"} + "://127.0.0.1:" + std::to_string(port_);
  }

  void answer(ScriptedAnswer answer) {
    std::lock_guard lock(mutex_);
    answer_ = std::move(answer);
  }
  void answer(int status, std::string body, httplib::Headers headers = {}) {
    answer(ScriptedAnswer{status, std::move(body), std::move(headers)});
  }

  // Requests wait, unanswered, until release(): lets a test see a client time out without
  // the server sleeping.
  void hold() {
    std::lock_guard lock(mutex_);
    hold_ = true;
  }
  void release() {
    {
      std::lock_guard lock(mutex_);
      hold_ = false;
    }
    released_.notify_all();
  }

  std::vector<RecordedRequest> requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
  }
  RecordedRequest last() const {
    std::lock_guard lock(mutex_);
    if (requests_.empty()) throw std::runtime_error("stub server: no request received");
    return requests_.back();
  }

 private:
  std::unique_ptr<httplib::Server> server_;
  int port_ = 0;
  std::thread thread_;
  mutable std::mutex mutex_;
  std::condition_variable released_;
  bool hold_ = false;
  ScriptedAnswer answer_;
  std::vector<RecordedRequest> requests_;
};

// A CA and certificates it signed (EC P-256: generated in milliseconds), as PEM and as
// OpenSSL objects for httplib::SSLServer.
class TestPki {
 public:
  struct Issued {
    std::shared_ptr<X509> cert;
    std::shared_ptr<EVP_PKEY> key;
    std::string cert_pem;
    std::string key_pem;
  };

  explicit TestPki(const std::string& ca_name = "stsresize-test-ca")
      : ca_(issue(ca_name, nullptr, /*is_ca=*/true, "")) {}

  const Issued& ca() const { return ca_; }
  // A server certificate for 127.0.0.1 and localhost.
  Issued server() const { return issue("127.0.0.1", &ca_, false, "IP:127.0.0.1,DNS:localhost"); }
  Issued client(const std::string& user) const { return issue(user, &ca_, false, ""); }

  // A store trusting this CA, owned by the caller (or by whoever it is handed to).
  X509_STORE* new_store() const {
    X509_STORE* store = X509_STORE_new();
    X509_STORE_add_cert(store, ca_.cert.get());
    return store;
  }

 private:
  static Issued issue(const std::string& common_name, const Issued* issuer, bool is_ca,
                      const std::string& alt_names) {
    static std::atomic<long> serial{1};
    Issued out;
    out.key.reset(EVP_EC_gen("P-256"), EVP_PKEY_free);
    out.cert.reset(X509_new(), X509_free);
    X509* cert = out.cert.get();
    X509_set_version(cert, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(cert), serial++);
    X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
    X509_gmtime_adj(X509_getm_notAfter(cert), 24 * 3600);
    X509_set_pubkey(cert, out.key.get());
    X509_NAME* name = X509_get_subject_name(cert);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1,
                               0);
    X509* issuer_cert = issuer ? issuer->cert.get() : cert;
    EVP_PKEY* issuer_key = issuer ? issuer->key.get() : out.key.get();
    X509_set_issuer_name(cert, X509_get_subject_name(issuer_cert));
    X509V3_CTX context;
    X509V3_set_ctx(&context, issuer_cert, cert, nullptr, nullptr, 0);
    const auto extend = [&](int nid, const std::string& value) {
      X509_EXTENSION* extension = X509V3_EXT_conf_nid(nullptr, &context, nid, value.c_str());
      if (extension == nullptr) throw std::runtime_error("test pki: bad extension " + value);
      X509_add_ext(cert, extension, -1);
      X509_EXTENSION_free(extension);
    };
    extend(NID_basic_constraints, is_ca ? "critical,CA:TRUE" : "CA:FALSE");
    if (is_ca) extend(NID_key_usage, "critical,keyCertSign,cRLSign");
    if (!alt_names.empty()) extend(NID_subject_alt_name, alt_names);
    if (X509_sign(cert, issuer_key, EVP_sha256()) == 0) {
      throw std::runtime_error("test pki: signing failed");
    }
    out.cert_pem = to_pem([&](BIO* bio) { return PEM_write_bio_X509(bio, cert); });
    out.key_pem = to_pem([&](BIO* bio) {
      return PEM_write_bio_PrivateKey(bio, out.key.get(), nullptr, nullptr, 0, nullptr, nullptr);
    });
    return out;
  }

  template <class Write>
  static std::string to_pem(Write write) {
    std::unique_ptr<BIO, decltype(&BIO_free)> bio{BIO_new(BIO_s_mem()), BIO_free};
    if (write(bio.get()) != 1) throw std::runtime_error("test pki: PEM write failed");
    char* data = nullptr;
    const long size = BIO_get_mem_data(bio.get(), &data);
    return std::string(data, static_cast<std::size_t>(size));
  }

  Issued ca_;
};

// The shared scratch directory, plus writing files (and their parent directories) into it.
class TempDir : public testing_support::ScratchDir {
 public:
  std::filesystem::path write(const std::string& name, const std::string& content) const {
    const auto target = file(name);
    std::filesystem::create_directories(target.parent_path());
    std::ofstream out(target, std::ios::binary | std::ios::trunc);
    out << content;
    if (!out) throw std::runtime_error("cannot write " + target.string());
    return target;
  }
};

}  // namespace stsresize::testing
