// reply_phrases_test.cc: the shipped rules (rules/default.toml) on the reply texts that mail
// servers and providers are known to send, one table per failure reason. The phrases are facts
// collected from public sources (named above each group): Sisimai's per-reason phrase lists
// (lib/Sisimai/Reason, go-sisimai reason/why-*.go) and per-provider lists (Rhost modules), the
// providers' own SMTP error references (Gmail/Google Workspace, Microsoft Exchange Online NDRs,
// Yahoo, iCloud, GoDaddy, Cox, Mimecast, Broadcom MessageLabs, Orange, Tencent) and RFC 3463.
// Each phrase is wrapped the way it arrives: usually behind a reply code and enhanced status as
// the server sends them, sometimes with Postfix's "(in reply to RCPT TO command)", and bare
// where the words alone must decide. Where our taxonomy (issue 2) decides differently from the
// source, the case says why. Reads only the embedded rules; writes nothing.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "classifier/result.h"
#include "classifier/rules.h"

namespace bounced {
namespace {

struct Phrase {
  Category want;
  const char* text;
  const char* recipient = "u@example.org";  // decides the provider by domain
  const char* stage = "";                   // as the DSN or log would give it
};

using C = Category;

// Ordered by our category; each group names where its phrases come from.
const Phrase kPhrases[] = {
    // ---- user_unknown -------------------------------------------------------------------------
    // Sisimai's Reason::UserUnknown phrase list, behind the x.1.1 code its servers send with it.
    {C::kUserUnknown, "550 5.1.1 <u@example.org>... #5.1.1 bad address"},
    {C::kUserUnknown, "550 Address invalid (in reply to RCPT TO command)"},
    {C::kUserUnknown, "550 5.1.0 Address rejected."},
    {C::kUserUnknown, "550 5.1.1 <u@example.org>: Address does not exist"},
    {C::kUserUnknown, "550 5.1.1 Address not present in directory"},
    {C::kUserUnknown, "550 5.1.1 <u@example.org>: Address unknown"},
    {C::kUserUnknown, "550 5.1.1 Can't accept user"},
    {C::kUserUnknown, "550 5.1.1 <u@example.org> does not exist."},
    {C::kUserUnknown, "550 5.1.1 One or more destination addresses were unknown"},
    {C::kUserUnknown, "550 5.1.1 Destination server rejected recipients"},
    {C::kUserUnknown, "550 5.1.1 The email address does not exist"},
    {C::kUserUnknown, "550 5.1.1 This email address could not be found"},
    {C::kUserUnknown, "550 5.1.1 Invalid address <u@example.org>"},
    {C::kUserUnknown, "550 5.1.1 Invalid mailbox: u@example.org"},
    {C::kUserUnknown, "550 5.1.1 Invalid mailbox path"},
    {C::kUserUnknown, "550 5.1.1 Invalid recipient <u@example.org>"},
    {C::kUserUnknown, "550 5.1.1 u is not a known user"},
    {C::kUserUnknown, "550 5.1.1 u@example.org is not a valid mailbox"},
    {C::kUserUnknown, "550 5.1.1 u@example.org is not an active address at this host"},
    {C::kUserUnknown, "550 5.1.1 Mailbox does not exist"},
    {C::kUserUnknown, "550 5.1.1 Mailbox invalid"},
    {C::kUserUnknown, "550 5.1.1 Mailbox is unavailable"},
    {C::kUserUnknown, "550 5.1.1 Mailbox not present"},
    {C::kUserUnknown, "550 5.1.1 Mailbox not found"},
    {C::kUserUnknown, "550 5.1.1 Nessun utente simile in questo indirizzo"},
    {C::kUserUnknown, "550 5.1.1 No account by that name here"},
    {C::kUserUnknown, "550 5.1.1 No existe dicha persona"},
    {C::kUserUnknown, "550 5.1.1 No existe ese usuario en este servidor"},
    {C::kUserUnknown, "550 5.1.1 No mail box available for this user"},
    {C::kUserUnknown, "550 5.1.1 No mailbox by that name is currently available"},
    {C::kUserUnknown, "550 5.1.1 No mailbox found"},
    {C::kUserUnknown, "550 5.1.1 No such address here"},
    {C::kUserUnknown, "550 5.1.1 No such mailbox"},
    {C::kUserUnknown, "550 5.1.1 No such person at this address"},
    {C::kUserUnknown, "550 5.1.1 No such recipient"},
    {C::kUserUnknown, "550 5.1.1 No such user"},
    {C::kUserUnknown, "550 5.1.1 no thank you rejected: Account Unavailable"},
    {C::kUserUnknown, "550 5.1.1 No valid recipients, bye"},
    {C::kUserUnknown, "550 5.1.1 <u@example.org>: Not a valid recipient"},
    {C::kUserUnknown, "550 5.1.1 Not a valid user here"},
    {C::kUserUnknown, "550 5.1.1 Not a local address"},
    {C::kUserUnknown, "550 5.1.1 Not email addresses"},
    {C::kUserUnknown, "550 5.1.1 <u@example.org>: Recipient address rejected: invalid user"},
    {C::kUserUnknown, "550 5.1.1 <u@example.org>: Recipient address rejected: Invalid-Recipient"},
    {C::kUserUnknown, "550 5.1.1 <u@example.org>: Recipient address rejected: unknown user"},
    {C::kUserUnknown, "550 5.1.1 <u@example.org>: Recipient address rejected: userunknown"},
    {C::kUserUnknown,
     "550 5.1.1 <u@example.org>: Recipient address rejected: User u@example.org does not exist"},
    {C::kUserUnknown,
     "550 5.1.1 <u@example.org>: Recipient address rejected: User unknown in local recipient "
     "table"},
    {C::kUserUnknown, "550 5.1.1 Recipient does not exist on this system"},
    {C::kUserUnknown, "550 5.1.1 Recipient is not accepted"},
    {C::kUserUnknown, "550 5.1.1 Recipient is not local"},
    {C::kUserUnknown, "550 5.1.1 Recipient not exist"},
    {C::kUserUnknown, "550 5.1.1 Recipient not found"},
    {C::kUserUnknown, "550 5.1.1 Recipient not OK"},
    {C::kUserUnknown, "550 5.1.1 Recipient unknown"},
    {C::kUserUnknown, "550 5.1.1 Sorry, user unknown"},
    {C::kUserUnknown, "553 sorry, badrcptto (#5.1.1)"},
    {C::kUserUnknown, "550 5.1.1 The following recipients was undeliverable"},
    {C::kUserUnknown, "550 5.1.1 The user's email name is not found"},
    {C::kUserUnknown, "550 5.1.1 There is no one at this address"},
    {C::kUserUnknown, "550 5.1.1 This email address is wrong or no longer valid"},
    {C::kUserUnknown, "553 5.1.1 This recipient is in my badrecipientto list"},
    {C::kUserUnknown, "553 5.1.1 This recipient is not in my validrcptto list"},
    {C::kUserUnknown, "550 5.1.1 This spectator does not exist"},
    {C::kUserUnknown, "550 5.1.1 Unknown mailbox"},
    {C::kUserUnknown, "550 5.1.1 Unknown recipient"},
    {C::kUserUnknown, "550 5.1.1 Unknown user"},
    {C::kUserUnknown, "550 5.1.1 User does not exist"},
    {C::kUserUnknown, "550 5.1.1 User missing home directory"},
    {C::kUserUnknown, "550 5.1.1 User not exist"},
    {C::kUserUnknown, "550 5.1.1 User not found"},
    {C::kUserUnknown, "550 5.1.1 User not known"},
    {C::kUserUnknown, "550 5.1.1 User unknown"},
    {C::kUserUnknown, "550 5.1.1 Utilisateur inconnu !"},
    {C::kUserUnknown, "550 5.1.1 vdeliver: Invalid or unknown virtual user 'u'"},
    {C::kUserUnknown,
     "550 5.1.1 Die E-Mail wurde nicht zugestellt, weil die Adresse nicht gefunden wurde oder "
     "keine E-Mails empfangen kann"},
    {C::kUserUnknown, "553 5.1.1 sorry, your envelope recipient is in my badrcptto list"},
    {C::kUserUnknown, "550 5.1.1 <u@example.org> not found"},
    {C::kUserUnknown,
     "550 5.1.1 Account u@example.org does not exist at the organization this message was sent to"},
    {C::kUserUnknown, "550 5.1.1 Bad recipient address"},
    {C::kUserUnknown, "550 5.1.1 Mailbox u@example.org does not exist"},
    {C::kUserUnknown, "550 5.1.1 no u@example.org in name directory"},
    {C::kUserUnknown, "550 5.1.1 Nonexistent user"},
    {C::kUserUnknown, "550 5.1.1 RCPT <u@example.org> does not exist"},
    {C::kUserUnknown, "550 5.1.1 Recipient u@example.org was not found in LDAP server"},
    {C::kUserUnknown, "550 5.1.1 Unknown e-mail address"},
    {C::kUserUnknown, "550 5.1.1 Unknown local-part u in domain example.org"},
    {C::kUserUnknown, "550 5.1.1 User u was not found"},
    {C::kUserUnknown, "550 5.1.1 User u does not exist"},
    {C::kUserUnknown, "550 5.1.1 User (u@example.org) unknown"},
    // The same words at RCPT with no enhanced code: the stage confirms them.
    {C::kUserUnknown, "550 No such user here (in reply to RCPT TO command)"},
    {C::kUserUnknown, "550 Unknown user u@example.org (in reply to RCPT TO command)"},
    {C::kUserUnknown, "550 Invalid recipient <u@example.org> (in reply to RCPT TO command)"},
    {C::kUserUnknown, "550 Mailbox not found (in reply to RCPT TO command)"},
    {C::kUserUnknown, "553 <u@example.org> does not exist (in reply to RCPT TO command)"},
    {C::kUserUnknown, "550 User u@example.org does not exist", "u@example.org", "rcpt"},
    // Gmail's SMTP error reference (support.google.com/a/answer/3726730).
    {C::kUserUnknown,
     "550-5.1.1 The email account that you tried to reach does not exist. Please try "
     "double-checking the recipient's email address for typos or unnecessary spaces. - gsmtp",
     "u@gmail.com"},
    {C::kUserUnknown,
     "553 5.1.3 The recipient address <u@gmail.com> is not a valid RFC 5321 address. - gsmtp",
     "u@gmail.com"},
    // Microsoft Exchange Online / Exchange Server NDR reference.
    {C::kUserUnknown, "550 5.1.1 RESOLVER.ADR.ExRecipNotFound; not found", "u@contoso.com"},
    {C::kUserUnknown, "550 5.1.1 User unknown", "u@outlook.com"},
    {C::kUserUnknown, "550 5.1.1 Bad destination mailbox address", "u@contoso.com"},
    {C::kUserUnknown, "550 5.1.3 STOREDRV.Submit; invalid recipient address", "u@contoso.com"},
    {C::kUserUnknown,
     "550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient u@outlook.com not found by SMTP "
     "address lookup",
     "u@outlook.com"},
    {C::kUserUnknown, "550 5.5.0 Requested action not taken: mailbox unavailable", "u@hotmail.com"},
    {C::kUserUnknown, "550 5.1.351 Remote server returned unknown recipient or mailbox unavailable",
     "u@contoso.com"},
    // Exchange Online 5.7.504 / 5.4.1: its directory says the address is not valid (Sisimai
    // files 5.7.504 under suspend; Microsoft's text says the address does not exist).
    {C::kUserUnknown, "550 5.7.504 Recipient address rejected: Access denied", "u@contoso.com"},
    // iCloud (support.apple.com/102322), Yahoo, Tencent, GoDaddy, Cox, MessageLabs, Mimecast,
    // Orange, i.ua: their published wording for an address that does not exist.
    {C::kUserUnknown, "550 5.1.1 <u@icloud.com>: user does not exist", "u@icloud.com"},
    {C::kUserUnknown, "550 5.1.1 unknown or illegal alias: u@icloud.com", "u@icloud.com"},
    {C::kUserUnknown, "552 1 Requested mail action aborted, mailbox not found", "u@yahoo.com",
     "rcpt"},
    {C::kUserUnknown, "550 Mailbox not found. https://service.mail.qq.com/detail/122/169",
     "u@qq.com", "rcpt"},
    {C::kUserUnknown, "550 5.1.1 Recipient not found", "u@secureserver.example"},
    {C::kUserUnknown, "550 5.1.1 Account does not exist"},
    {C::kUserUnknown, "550 5.1.0 <u@cox.net> recipient rejected", "u@cox.net"},
    {C::kUserUnknown, "550-Invalid recipient <u@example.org> 550 (#5.1.1)"},
    {C::kUserUnknown, "553 5.1.1 Recipient mailbox is not allowed"},
    {C::kUserUnknown,
     "550 Invalid recipient <u@example.org> (#5.1.1) - https://community.mimecast.com/docs/"
     "DOC-1369#550"},
    {C::kUserUnknown,
     "550 5.1.1 Adresse d au moins un destinataire invalide. Invalid recipient. OFR_416 [416]",
     "u@orange.fr"},
    {C::kUserUnknown, "550 5.1.1 User is not found. https://mail.i.ua/err/2/", "u@i.ua"},
    // Lotus Notes / HCL Domino's directory, in its English, Spanish and French wording: no status
    // or stage is needed, only the directory says it.
    {C::kUserUnknown, "User u (u@example.org) not listed in Domino Directory"},
    {C::kUserUnknown, "Usuario u (u@example.org) no se encuentra en el Directorio de Domino"},
    {C::kUserUnknown,
     "Utilisateur u (u@example.org) non r\xc3\xa9pertori\xc3\xa9 dans l'annuaire Domino"},

    // ---- domain_unknown -----------------------------------------------------------------------
    // Sisimai's Reason::HostUnknown list; RFC 3463 x.1.2.
    {C::kDomainUnknown, "550 5.1.2 Domain does not exist"},
    {C::kDomainUnknown, "550 5.1.2 Domain is not reachable"},
    {C::kDomainUnknown, "550 5.1.2 Recipient domain must exist"},
    {C::kDomainUnknown,
     "Host or domain name not found. Name service error for name=example.org "
     "type=A: Host not found"},
    {C::kDomainUnknown, "550 5.1.2 Host unknown"},
    {C::kDomainUnknown, "550 5.1.2 Mail domain mentioned in email address is unknown"},
    {C::kDomainUnknown, "550 5.1.2 example.org: Name or service not known"},
    {C::kDomainUnknown, "550 5.1.2 No such domain"},
    {C::kDomainUnknown,
     "550 5.1.2 <u@example.org>: Recipient address rejected: unknown domain name"},
    {C::kDomainUnknown,
     "The account or domain may not exist, they may be blacklisted, or missing "
     "the proper dns entries."},
    {C::kDomainUnknown, "550 5.1.2 unknown host"},
    {C::kDomainUnknown, "550 Unroutable address"},
    {C::kDomainUnknown, "550 Unrouteable address"},
    // Gmail's reference; Microsoft's 5.4.310 and SMTPSEND.DNS.NonExistentDomain (Sisimai files
    // the latter under network errors: the name does not exist, which is this category).
    {C::kDomainUnknown,
     "553 5.1.2 We weren't able to find the recipient domain. Please check for any spelling "
     "errors. - gsmtp",
     "u@gmail.com"},
    {C::kDomainUnknown, "550 5.4.310 DNS domain example.org does not exist", "u@example.org"},
    {C::kDomainUnknown, "554 5.4.4 SMTPSEND.DNS.NonExistentDomain; nonexistent domain"},
    {C::kDomainUnknown, "Host or domain name not found", "u@aol.com"},
    {C::kDomainUnknown,
     "The mail could not be delivered to the recipient because the domain is not reachable",
     "u@outlook.com"},
    // MTAs' own wording (Sisimai's Lhost modules quote the sources): qmail-remote, Courier,
    // OpenSMTPD.
    {C::kDomainUnknown, "Sorry, I couldn't find any host by that name. (#4.1.2)"},
    {C::kDomainUnknown, "Sorry, I couldn't find any host named example.org. (#5.1.2)"},
    {C::kDomainUnknown, "No such domain."},
    {C::kDomainUnknown, "Invalid domain name"},
    {C::kDomainUnknown, "Domain does not exist"},
    {C::kDomainUnknown, "Illegal host/domain name found"},
    // Gmail's older bounce text (Sisimai's Lhost::Gmail).
    {C::kDomainUnknown,
     "Technical details of permanent failure: DNS Error: DNS server returned answer with no data"},
    {C::kDomainUnknown,
     "Could not be delivered to: <u@example.org> As the remote domain doesnt exist.",
     "u@example.org"},

    // ---- not_accept ---------------------------------------------------------------------------
    // Sisimai's Reason::NotAccept list (null MX, hosts that take no mail), Yahoo, iCloud.
    {C::kNotAccept,
     "556 5.1.10 Recipient address rejected: Domain example.org does not accept "
     "mail (nullMX)"},
    {C::kNotAccept, "550 5.7.1 Host/domain does not accept mail", "u@icloud.com"},
    {C::kNotAccept, "553 5.1.2 Host does not accept mail"},
    {C::kNotAccept, "554 No MX record found for domain=example.org"},
    {C::kNotAccept, "an MX or SRV record indicated no SMTP service"},
    {C::kNotAccept, "554 5.1.2 example.org does not accept mail"},
    {C::kNotAccept, "550 5.7.1 This domain does not accept mail"},
    {C::kNotAccept, "Sorry, I couldn't find a mail exchanger or IP address. (#5.4.4)"},
    {C::kNotAccept, "Destination seem to reject all mails"},
    {C::kNotAccept, "No MX found for destination"},

    // ---- mailbox_moved ------------------------------------------------------------------------
    // RFC 5321 551 / RFC 3463 x.1.6; Sisimai's Reason::HasMoved; iCloud.
    {C::kMailboxMoved, "551 5.1.6 User not local; please try <u@example.net>"},
    {C::kMailboxMoved, "550 5.1.6 u@example.org has been replaced by u@example.net"},
    {C::kMailboxMoved, "550 5.1.6 recipient no longer on server: u@icloud.com", "u@icloud.com"},
    {C::kMailboxMoved, "551 User has moved; please try <u@example.net>"},

    // ---- mailbox_disabled ---------------------------------------------------------------------
    // Sisimai's Reason::Suspend list, Gmail (DisabledUser), Yahoo/AOL, Orange, GoDaddy, i.ua.
    {C::kMailboxDisabled, "550 5.2.1 u@example.org is currently suspended"},
    {C::kMailboxDisabled, "550 5.2.1 Account temporary locked"},
    {C::kMailboxDisabled, "550 5.2.1 Archived recipient"},
    {C::kMailboxDisabled,
     "550 5.2.1 The email account that you tried to reach is disabled. - gsmtp", "u@gmail.com"},
    {C::kMailboxDisabled,
     "550 5.2.1 The email account that you tried to reach is inactive. - gsmtp", "u@gmail.com"},
    {C::kMailboxDisabled, "550 5.2.1 This account has been suspended"},
    {C::kMailboxDisabled, "550 5.2.1 Inactive account"},
    {C::kMailboxDisabled, "550 5.2.1 Invalid/inactive user"},
    {C::kMailboxDisabled, "550 u@qq.com is a deactivated mailbox", "u@qq.com"},
    {C::kMailboxDisabled, "550 5.2.1 Mailbox u@example.org is unavailable: user is terminated"},
    {C::kMailboxDisabled, "550 5.2.1 Mailbox currently suspended"},
    {C::kMailboxDisabled, "550 5.2.1 Mailbox disabled"},
    {C::kMailboxDisabled, "550 5.2.1 Mailbox is frozen"},
    {C::kMailboxDisabled, "550 Mailbox unavailable or access denied", "u@qq.com"},
    {C::kMailboxDisabled, "550 5.2.1 Recipient rejected: temporarily inactive"},
    {C::kMailboxDisabled, "550 Recipient suspend the service", "u@163.com"},
    {C::kMailboxDisabled,
     "554 30 Sorry, your message to u@aol.com cannot be delivered. This account has been "
     "disabled or discontinued [#102].",
     "u@aol.com"},
    {C::kMailboxDisabled, "550 5.2.1 This account has been temporarily suspended"},
    {C::kMailboxDisabled, "550 5.2.1 This address no longer accepts mail"},
    {C::kMailboxDisabled,
     "554 30 Sorry, your message to u@aol.com cannot be delivered. This mailbox is disabled "
     "(554.30)",
     "u@aol.com"},
    {C::kMailboxDisabled, "550 5.2.1 User or domain is disabled"},
    {C::kMailboxDisabled, "550 User suspended", "u@163.com"},
    {C::kMailboxDisabled, "vdelivermail: account is locked email bounced"},
    {C::kMailboxDisabled, "554 delivery error: dd u@yahoo.com is no longer valid.", "u@yahoo.com"},
    {C::kMailboxDisabled,
     "550 5.5.0 Boite du destinataire archivee. Archived recipient. LPN007_420", "u@laposte.net"},
    {C::kMailboxDisabled,
     "550 5.5.0 Le compte du destinataire est bloque. The recipient account isblocked. "
     "LPN007_426",
     "u@laposte.net"},
    {C::kMailboxDisabled, "550 5.2.1 Account disabled"},
    {C::kMailboxDisabled, "550 5.2.1 Mailbox cannot be accessed", "u@contoso.com"},
    {C::kMailboxDisabled,
     "550 5.2.1 Mailbox was not used for more than 3 months. https://mail.i.ua/err/3/", "u@i.ua"},
    {C::kMailboxDisabled, "550 5.1.1 <u@icloud.com>: inactive email address", "u@icloud.com"},
    // qmail-ldap's wording, misspellings included.
    {C::kMailboxDisabled, "Mailaddress is administrativly disabled. (#5.2.1)"},
    {C::kMailboxDisabled, "Mailaddress is administrativley disabled. (#5.2.1)"},

    // ---- mailbox_full -------------------------------------------------------------------------
    // Sisimai's Reason::MailboxFull list; RFC 3463 x.2.2; Gmail, iCloud, Exchange, Orange,
    // GoDaddy.
    {C::kMailboxFull, "452 4.2.2 Boite du destinataire pleine. Recipient overquota. OFR_417 [417]",
     "u@orange.fr"},
    {C::kMailboxFull, "552 5.2.2 Requested mail action aborted: exceeded storage allocation"},
    {C::kMailboxFull, "552 5.2.2 Full mailbox"},
    {C::kMailboxFull, "552 5.2.2 Mailbox exceeds allowed size"},
    {C::kMailboxFull, "552 5.2.2 Mailbox size limit exceeded"},
    {C::kMailboxFull, "552 5.2.2 Recipient rejected: mailbox would exceed maximum allowed storage"},
    {C::kMailboxFull, "552 5.2.2 Mailfolder is full"},
    {C::kMailboxFull, "552 5.2.2 Quota violation for u@example.org"},
    {C::kMailboxFull, "550 Too much mail data", "u@docomo.ne.jp"},
    {C::kMailboxFull, "552 5.2.2 User has exceeded quota, bouncing mail"},
    {C::kMailboxFull, "552 5.2.2 User has too many messages on the server"},
    {C::kMailboxFull, "552 5.2.2 The user's space has been used up"},
    {C::kMailboxFull, "552 5.2.2 Account is over quota"},
    {C::kMailboxFull, "452 4.2.2 The user(s) account is temporarily over quota", "u@ezweb.ne.jp"},
    {C::kMailboxFull, "552 5.2.2 Disk quota exceeded"},
    {C::kMailboxFull, "552 5.2.2 Not enough storage space in the mailbox"},
    {C::kMailboxFull, "552 5.2.2 Mailbox has exceeded the local limit"},
    {C::kMailboxFull, "552 5.2.2 Mailbox full"},
    {C::kMailboxFull, "552 5.2.2 Mailbox quota usage exceeded"},
    {C::kMailboxFull, "maildir delivery failed: Userdisk quota 100000000 exceeded"},
    {C::kMailboxFull, "552 5.2.2 Maildir over quota"},
    {C::kMailboxFull, "552 5.2.2 Over quota"},
    {C::kMailboxFull, "552 5.2.2 Quota exceeded"},
    {C::kMailboxFull, "552 5.2.2 u is over disk quota"},
    {C::kMailboxFull, "552 5.2.2 Recipient reached disk quota"},
    {C::kMailboxFull, "552 5.2.2 The recipient mailbox has exceeded its disk space limit"},
    {C::kMailboxFull, "552 5.2.2 The user you are trying to reach is over quota."},
    {C::kMailboxFull, "552 5.2.2 Message was automatically rejected: quota exceeded"},
    {C::kMailboxFull, "552 5.2.2 This message would be over the allowed quota"},
    {C::kMailboxFull, "552 5.2.2 Mailbox is exceeding its mailbox quota"},
    {C::kMailboxFull, "552 5.2.2 delivery failed: over quota"},
    {C::kMailboxFull, "552 5.2.2 Disc quota exceeded"},
    {C::kMailboxFull, "552 5.2.2 The recipient does not have enough space"},
    {C::kMailboxFull,
     "552 5.2.2 Mail file size exceeds the maximum size allowed for mail delivery"},
    {C::kMailboxFull, "552 5.2.2 Mail quota exceeded"},
    {C::kMailboxFull, "552 5.2.2 <u@icloud.com>: user is over quota", "u@icloud.com"},
    {C::kMailboxFull,
     "452-4.2.2 The email account that you tried to reach is over quota. Please direct the "
     "recipient to Clear Google Drive space & increase storage. - gsmtp",
     "u@gmail.com"},
    {C::kMailboxFull,
     "552-5.2.2 The recipient's inbox is out of storage space and inactive. Please direct the "
     "recipient to https://support.google.com/mail/?p=OverQuotaPerm - gsmtp",
     "u@gmail.com"},
    {C::kMailboxFull, "554 5.2.2 mailbox full; STOREDRV.Deliver.Exception:QuotaExceededException",
     "u@contoso.com"},
    {C::kMailboxFull, "552 Account storage limit"},
    {C::kMailboxFull, "452 4.2.2 Mailbox is full. https://mail.i.ua/err/4/", "u@i.ua"},
    {C::kMailboxFull, "Mailbox full", "u@example.org", "rcpt"},
    {C::kMailboxFull, "Could not be delivered to: <u@example.org> As their mailbox is full."},
    {C::kMailboxFull, "The number of messages in recipient's mailbox exceeded the local limit.",
     "u@biglobe.ne.jp"},

    // ---- spam_content -------------------------------------------------------------------------
    // Sisimai's Reason::SpamDetected list, Gmail, GoDaddy, Tencent, mail.ru, Exchange.
    {C::kSpamContent, "550 5.7.1 Message rejected - spam"},
    {C::kSpamContent, "554 5.7.1 Mail appears to be unsolicited"},
    {C::kSpamContent, "550 5.7.1 Blacklisted URL in message"},
    {C::kSpamContent, "554 5.7.1 Message blocked for spam"},
    {C::kSpamContent, "550 5.7.1 Blocked by policy: no spam please"},
    {C::kSpamContent, "550 5.7.1 Blocked by SpamAssassin"},
    {C::kSpamContent, "550 5.7.1 Message cannot be forwarded because it was detected as spam"},
    {C::kSpamContent,
     "550 5.7.1 Message considered unsolicited bulk e-mail (spam) by our mail filters"},
    {C::kSpamContent, "554 5.7.1 Content filter rejection"},
    {C::kSpamContent,
     "554 5.7.1 Cyberoam Anti Spam Engine has identified this email as a bulk email"},
    {C::kSpamContent, "550 5.7.1 High probability of spam"},
    {C::kSpamContent, "550 5.7.1 Message is classified as spam and is rejected"},
    {C::kSpamContent,
     "550 5.7.1 The mail server detected your message as spam and has prevented delivery."},
    {C::kSpamContent, "550 Mail content denied. https://service.mail.qq.com/detail/122/171",
     "u@qq.com"},
    {C::kSpamContent, "550 5.7.1 We may consider spam"},
    {C::kSpamContent, "554 5.7.1 Message considered as spam or virus"},
    {C::kSpamContent, "554 5.7.1 Message contains spam or virus"},
    {C::kSpamContent, "550 5.7.1 Message content rejected"},
    {C::kSpamContent, "550 5.7.1 Message detected as spam"},
    {C::kSpamContent, "550 5.7.1 Message filtered. Please see the FAQs section on spam"},
    {C::kSpamContent, "550 5.7.1 Message looks like spam"},
    {C::kSpamContent, "550 5.7.1 Message is being rejected as it seems to be a spam"},
    {C::kSpamContent, "550 5.7.1 Message refused by MailMarshal SpamProfiler"},
    {C::kSpamContent, "550 5.7.1 Message refused by Trustwave SEG SpamProfiler"},
    {C::kSpamContent, "550 5.7.1 Message rejected as spam"},
    {C::kSpamContent, "550 5.7.1 Message rejected due to suspected spam content"},
    {C::kSpamContent, "550 5.7.1 Message was rejected for possible spam/virus content"},
    {C::kSpamContent, "550 5.7.1 Our email server thinks this email is spam"},
    {C::kSpamContent,
     "550-5.7.1 Our system has detected that this message is likely unsolicited mail. - gsmtp",
     "u@gmail.com"},
    // Gmail's content block ends "has been blocked": the content, not the IP, is at fault.
    {C::kSpamContent,
     "421-4.7.0 [192.0.2.1] Our system has detected that this message is suspicious due to the "
     "nature of the content and/or the links within. To best protect our users from spam, the "
     "message has been blocked."},
    {C::kSpamContent, "554 5.7.1 Probable spam"},
    {C::kSpamContent, "554 5.7.1 Reject bulk.advertising"},
    {C::kSpamContent, "550 5.7.1 Rejected: SpamAssassin score 12.3"},
    {C::kSpamContent, "550 5.7.1 Rejected - bulk email"},
    {C::kSpamContent, "550 5.7.1 Rejecting mail content"},
    {C::kSpamContent, "550 5.7.1 Sending address not accepted due to spam filter"},
    {C::kSpamContent, "550 5.7.1 Spam blocked"},
    {C::kSpamContent, "550 5.7.1 Spam content matched"},
    {C::kSpamContent, "550 5.7.1 Spam detected"},
    {C::kSpamContent, "550 5.7.1 Spam email not accepted"},
    {C::kSpamContent, "550 spam message rejected.", "u@mail.ru"},
    {C::kSpamContent, "550 5.7.1 Spam not accepted"},
    {C::kSpamContent, "550 5.7.1 Spam refused"},
    {C::kSpamContent, "550 5.7.1 SpamBouncer identified SPAM"},
    {C::kSpamContent, "550 5.7.1 Spamming not allowed"},
    {C::kSpamContent, "550 5.7.1 The email message was detected as spam"},
    {C::kSpamContent, "550 5.7.1 The message has been rejected by spam filtering engine"},
    {C::kSpamContent, "550 5.7.1 The message was rejected due to classification as bulk mail"},
    {C::kSpamContent, "550 5.7.1 The content of this message looked like spam"},
    {C::kSpamContent, "550 5.7.1 This message appears to be spam"},
    {C::kSpamContent, "550 5.7.1 This message has been identified as spam"},
    {C::kSpamContent, "550 5.7.1 This message has been scored as spam with a probability of 97"},
    {C::kSpamContent, "550 5.7.1 This message was classified as spam"},
    {C::kSpamContent, "550 5.7.1 This message was rejected by Recurrent Pattern Detection System"},
    {C::kSpamContent, "550 5.7.1 Transaction failed spam message not queued"},
    {C::kSpamContent, "550 5.7.1 We dont accept spam"},
    {C::kSpamContent, "550 5.7.1 Your email appears similar to spam we have received before"},
    {C::kSpamContent, "550 5.7.1 Your email breaches local URIBL policy"},
    {C::kSpamContent, "550 5.7.1 Your email had spam-like header contents"},
    {C::kSpamContent, "550 5.7.1 Your email is considered spam"},
    {C::kSpamContent, "550 5.7.1 Your email is probably spam"},
    {C::kSpamContent, "550 5.7.1 Your email was detected as spam"},
    {C::kSpamContent, "550 5.7.1 Your message has been temporarily blocked by our filter"},
    {C::kSpamContent, "550 5.7.1 Your message has been rejected because it appears to be spam"},
    {C::kSpamContent, "550 5.7.1 Your message has triggered a SPAM block"},
    {C::kSpamContent, "550 5.7.1 Your message may contain the spam contents"},
    {C::kSpamContent, "550 5.7.1 Your message failed several antispam checks"},
    {C::kSpamContent, "550 5.7.1 Mail score (14.2) over MXE limit (10)"},
    {C::kSpamContent, "550 5.7.1 Mail rejete. Mail rejected. OFR_506 [506]", "u@orange.fr"},
    {C::kSpamContent,
     "550 5.7.1 Our filters rate at and above 90 percent probability of being spam"},
    {C::kSpamContent, "550 5.7.1 Rejected by mx01.example.org (spam)"},
    {C::kSpamContent, "550 5.7.1 Rejected due to spam classification"},
    {C::kSpamContent, "550 5.7.1 Rejected due to spam content"},
    {C::kSpamContent, "550 5.7.1 Message blocked due to spam content in the message."},
    {C::kSpamContent, "550 5.7.1 Spam score 12.5 exceeded threshold"},
    {C::kSpamContent, "550 5.7.1 This message scored 15.2 spam points"},
    {C::kSpamContent,
     "552 This message has been rejected due to content judged to be spam by the internet "
     "community. IB212"},
    {C::kSpamContent, "552 Message rejected for spam or virus content"},
    {C::kSpamContent,
     "421-4.7.0 This message is suspicious due to the nature of the content or the links "
     "within. - gsmtp",
     "u@gmail.com"},
    {C::kSpamContent, "550 Spam is embedded in the email", "u@qq.com"},
    // Zoho files this under the sender (Sisimai: rejected); the reply names spam, which is ours.
    {C::kSpamContent, "554 5.7.1 Email cannot be delivered. Reason: Email flagged as Spam.",
     "u@zoho.com"},
    {C::kSpamContent, "550 5.2.1 Content Filter agent quarantined this message", "u@contoso.com"},

    // ---- filtered -----------------------------------------------------------------------------
    // Sisimai's Reason::Filtered list (the recipient's own rules refuse the sender), Biglobe,
    // Mimecast's personal block entries, i.ua; and "user unknown" words that nothing confirms
    // (after DATA, or with a mailbox-status code), which bounced counts as filtered too.
    {C::kFiltered, "550 5.7.1 This account is protected by a sender filter"},
    {C::kFiltered, "550 5.7.1 u@example.org has restricted SMS e-mail", "u@txt.att.net"},
    {C::kFiltered, "550 5.7.1 Message rejected due to user rules"},
    {C::kFiltered, "550 Recipient ID refuse to receive mail"},
    // NetEase (163.com) when the recipient has refused the sender.
    {C::kFiltered, "550 Mail is rejected by recipients", "u@163.com"},
    {C::kFiltered,
     "554 5.7.1 Your mail could not be delivered because the recipient is only accepting mail "
     "from specific email addresses"},
    {C::kFiltered, "550 5.7.1 Refused due to recipient preferences", "u@facebook.com"},
    {C::kFiltered, "550 5.7.1 User refuses to receive this mail"},
    {C::kFiltered, "550 5.7.1 User reject"},
    {C::kFiltered, "550 5.7.1 You have been blocked by the recipient"},
    {C::kFiltered, "Mail Delivery Failed... User unknown", "u@biglobe.ne.jp"},
    {C::kFiltered, "550 Envelope blocked - User Entry - https://community.mimecast.com"},
    {C::kFiltered, "550 5.7.1 Not in the list Mail address management. https://mail.i.ua/err/10/",
     "u@i.ua"},
    {C::kFiltered, "550 5.2.1 <u@example.org>... User Unknown"},
    {C::kFiltered,
     "SMTP error from remote mail server after end of data: 550 <u@example.org>: No such user"},

    // ---- virus_detected -----------------------------------------------------------------------
    // Sisimai's Reason::VirusDetected list, GoDaddy.
    {C::kVirusDetected,
     "550 5.7.1 This message was rejected because it has a potentially executable attachment"},
    {C::kVirusDetected,
     "550 5.7.1 The message was rejected because it contains prohibited virus or spam content"},
    {C::kVirusDetected,
     "552 5.7.0 This form of attachment has been used by recent viruses or other malware"},
    {C::kVirusDetected, "554 5.7.1 Virus detected"},
    {C::kVirusDetected, "554 5.7.1 Virus Phishing/Malicious_URL detected"},
    {C::kVirusDetected, "554 5.7.1 Your message was infected with a virus"},
    {C::kVirusDetected, "552 Virus infected message rejected. IB705"},
    {C::kVirusDetected, "552 5.7.1 virus Eicar-Test-Signature detected by Zoho Mail", "u@zoho.com"},
    {C::kVirusDetected, "554 5.7.1 Message rejected: virus found (Eicar-Test-Signature)"},

    // ---- content_rejected ---------------------------------------------------------------------
    // Sisimai's Reason::ContentError and NotCompliantRFC lists, Gmail's RFC 5322 texts,
    // Exchange, Yahoo, MessageLabs, GoDaddy.
    {C::kContentRejected, "554 5.6.0 Duplicate header \"Subject\""},
    {C::kContentRejected, "552 5.6.0 Header size exceeds maximum permitted"},
    {C::kContentRejected, "554 5.6.0 Improper use of 8-bit data in message header"},
    {C::kContentRejected, "552 5.6.0 Message MIME complexity exceeds the policy maximum"},
    {C::kContentRejected, "554 5.6.0 This message contain invalid MIME headers"},
    {C::kContentRejected, "554 5.6.0 This message contain improperly-formatted binary content"},
    {C::kContentRejected,
     "554 5.6.0 This message contain text that uses unnecessary base64 encoding"},
    {C::kContentRejected,
     "550-5.7.1 This message is not RFC 5322 compliant because it has duplicate headers. - gsmtp",
     "u@gmail.com"},
    {C::kContentRejected,
     "550-5.7.1 Messages missing a valid address in the From: header, or having no From: "
     "header, are not accepted. - gsmtp",
     "u@gmail.com"},
    {C::kContentRejected,
     "550-5.7.1 Messages missing a valid Message-ID: header are not accepted. - gsmtp",
     "u@gmail.com"},
    {C::kContentRejected,
     "550-5.7.1 The message contains a unicode character in a disallowed header. - gsmtp",
     "u@gmail.com"},
    {C::kContentRejected,
     "550-5.7.1 Encoded-word syntax is not permitted in message header Subject. - gsmtp",
     "u@gmail.com"},
    {C::kContentRejected, "554 5.6.0 Mail message is malformed. Not accepted. - gsmtp",
     "u@gmail.com"},
    {C::kContentRejected, "550 5.6.11 SMTPSEND.BareLinefeedsAreIllegal; invalid characters",
     "u@contoso.com"},
    {C::kContentRejected, "554 5.5.6 Invalid message content", "u@contoso.com"},
    {C::kContentRejected,
     "550 5.7.512 Access denied, message must be RFC 5322 section 3.6.2 compliant",
     "u@contoso.com"},
    {C::kContentRejected, "554 5.7.1 Headers are not RFC compliant", "u@yahoo.com"},
    {C::kContentRejected, "553 Stray linefeeds in message (#5.6.2)"},
    {C::kContentRejected,
     "550 [192.0.2.1] has detected that this message is not RFC 5322 compliant"},
    {C::kContentRejected,
     "550 u@example.com Blank From: addresses are not allowed. Provide a valid From. IB501"},
    {C::kContentRejected,
     "550 u@example.com IP addresses are not allowed as a From: Address. Provide a valid From. "
     "IB502"},
    {C::kContentRejected, "554 5.6.0 Message header size exceeds policy limit"},

    // ---- message_too_large --------------------------------------------------------------------
    // Sisimai's Reason::MesgTooBig, ExceedLimit and EmailTooLarge lists; Gmail, Exchange,
    // Mimecast, Orange, Tencent; RFC 3463 x.3.4 and x.2.3.
    {C::kMessageTooLarge, "552 5.3.4 Exceeded maximum inbound message size"},
    {C::kMessageTooLarge, "552 5.3.4 Message exceeded the maximum incoming message size"},
    {C::kMessageTooLarge, "500 Line limit exceeded"},
    {C::kMessageTooLarge, "552 5.3.4 Max message size exceeded"},
    {C::kMessageTooLarge, "552 5.3.4 Error: message file too big"},
    {C::kMessageTooLarge, "552 5.2.3 Message length exceeds administrative limit"},
    {C::kMessageTooLarge, "552 5.3.4 Message size exceeds fixed limit"},
    {C::kMessageTooLarge, "552 5.3.4 Message size exceeds fixed maximum message size"},
    {C::kMessageTooLarge, "552 5.3.4 Message size exceeds maximum value"},
    {C::kMessageTooLarge, "552 5.3.4 Message too big"},
    {C::kMessageTooLarge, "552 5.2.3 Message too large for this recipient"},
    {C::kMessageTooLarge, "552 5.3.4 Taille limite du message atteinte", "u@orange.fr"},
    {C::kMessageTooLarge, "552 5.3.4 Message header size exceeds limit"},
    {C::kMessageTooLarge, "552 5.3.4 Message too large"},
    {C::kMessageTooLarge, "552-5.2.3 Your message exceeded Google's message size limits. - gsmtp",
     "u@gmail.com"},
    {C::kMessageTooLarge,
     "552-5.3.4 The number of attachments (600) exceeds Google's limit of 500 attachments. - "
     "gsmtp",
     "u@gmail.com"},
    {C::kMessageTooLarge,
     "552-5.3.4 Your message exceeded Google's message header size limits. - gsmtp", "u@gmail.com"},
    {C::kMessageTooLarge,
     "550 5.2.3 RESOLVER.RST.RecipSizeLimit; message too large for this recipient",
     "u@contoso.com"},
    {C::kMessageTooLarge, "552 5.3.4 Message too big for system", "u@contoso.com"},
    {C::kMessageTooLarge, "554 Maximum email size exceeded"},
    {C::kMessageTooLarge, "The message exeeded the maximum size the user accepts. (#5.2.3)"},
    {C::kMessageTooLarge, "552 sorry, that message size exceeds my databytes limit (#5.3.4)"},
    {C::kMessageTooLarge,
     "Mail size limit exceeded. For explanation visit "
     "http://postmaster.1and1.com/en/error-messages?ip=192.0.2.1"},
    {C::kMessageTooLarge, "552 Message too large. https://service.mail.qq.com/detail/122/168",
     "u@qq.com"},

    // ---- policy_rejection ---------------------------------------------------------------------
    // Sisimai's Reason::PolicyViolation list, Gmail, Yahoo, iCloud, Exchange transport rules,
    // Mimecast.
    {C::kPolicyRejection,
     "554 5.7.1 Your mail could not be delivered because the recipient is not accepting mail "
     "with attachments or embedded images"},
    {C::kPolicyRejection, "550 5.7.1 Posting by non-member to a members-only list"},
    {C::kPolicyRejection, "550 5.7.1 This is a closed mailing list"},
    {C::kPolicyRejection, "550 5.7.1 Denied by policy"},
    {C::kPolicyRejection, "554 Message not allowed - [PH01] Email not accepted for policy reasons",
     "u@yahoo.com"},
    {C::kPolicyRejection, "554 Email rejected due to security policies"},
    {C::kPolicyRejection, "550 5.7.1 Local Policy Violation"},
    {C::kPolicyRejection, "550 5.7.1 Message bounced due to organizational settings"},
    {C::kPolicyRejection, "550 5.7.1 Message given low priority"},
    {C::kPolicyRejection,
     "554 5.7.9 Message not accepted for policy reasons. See "
     "https://postmaster.yahooinc.com/error-codes",
     "u@yahoo.com"},
    {C::kPolicyRejection, "550 5.7.1 Message rejected due to local policy"},
    {C::kPolicyRejection, "550 5.7.1 Rejected for policy reasons"},
    {C::kPolicyRejection,
     "550 5.7.1 The email address used to send your message is not subscribed to this group"},
    {C::kPolicyRejection, "550 5.7.1 The message was rejected by organization policy"},
    {C::kPolicyRejection,
     "550 5.7.1 We do not accept messages containing images or other attachments"},
    {C::kPolicyRejection, "550 5.7.1 You're using a mass mailer"},
    {C::kPolicyRejection,
     "550 5.7.1 [CS01] Message rejected due to local policy. Please visit "
     "https://support.apple.com/en-us/HT204137",
     "u@icloud.com"},
    {C::kPolicyRejection,
     "550 5.7.1 The user or domain that you are sending to (or from) has a policy that "
     "prohibited the mail that you sent. - gsmtp",
     "u@gmail.com"},
    {C::kPolicyRejection,
     "421-4.7.28 Gmail has detected this message exceeded its quota for sending messages with "
     "the same Message-ID:. - gsmtp",
     "u@gmail.com"},
    {C::kPolicyRejection, "550 5.7.901 Delivery not authorized, message refused", "u@contoso.com"},
    {C::kPolicyRejection,
     "550 5.0.350 Requested action not taken: policy violation detected (AS345)", "u@contoso.com"},
    {C::kPolicyRejection, "550 Anti-Spoofing policy - Inbound not allowed"},
    {C::kPolicyRejection, "550 Rejected by header-based Anti-Spoofing policy"},
    {C::kPolicyRejection, "550 Message bounced due to content examination policy"},
    {C::kPolicyRejection, "554 Host network not allowed"},
    {C::kPolicyRejection, "554 5.7.1 Attachment extension is forbidden"},
    {C::kPolicyRejection, "554 5.7.7 Email policy violation detected", "u@zoho.com"},
    {C::kPolicyRejection, "552 5.1.1 <u@zoho.com> Mailbox delivery restricted by policy error",
     "u@zoho.com"},

    // ---- reputation_block ---------------------------------------------------------------------
    // Sisimai's Reason::Blocked and BadReputation lists; Gmail, Microsoft (5.7.606-649, S3150),
    // Yahoo (BL21/BL23), iCloud, GoDaddy, Cox, MessageLabs, Orange, Tencent, i.ua.
    {C::kReputationBlock, "550 5.7.1 Bad sender IP address"},
    {C::kReputationBlock,
     "550 5.7.606 Access denied, banned sending IP [192.0.2.1]. To request removal from this "
     "list please visit https://sender.office.com/",
     "u@contoso.com"},
    {C::kReputationBlock, "554 5.7.1 Blacklisted by example.net"},
    {C::kReputationBlock,
     "554 5.7.1 Service unavailable; Client host [192.0.2.1] blocked using zen.spamhaus.org"},
    {C::kReputationBlock, "550 5.7.1 Blocked - see https://ipcheck.proofpoint.com/?ip=192.0.2.1"},
    {C::kReputationBlock, "550 5.7.1 Client host rejected: may not be mail exchanger"},
    {C::kReputationBlock,
     "553 5.7.1 Connections not accepted from IP addresses on Spamhaus XBL; see "
     "http://postmaster.yahoo.com/errors/550-bl23.html",
     "u@yahoo.com"},
    {C::kReputationBlock, "554 5.7.1 Currently sending spam see: http://www.sorbs.net/lookup"},
    {C::kReputationBlock, "554 5.7.1 Dynamic/zombied/spam IPs blocked"},
    {C::kReputationBlock, "554 xxx-smtpin001.me.com ESMTP not accepting connections", "u@me.com"},
    {C::kReputationBlock, "554 5.7.1 Extreme bad IP profile"},
    {C::kReputationBlock, "550 5.7.1 We do not accept mail from hosts with dynamic IP"},
    {C::kReputationBlock, "550 5.7.1 Invalid IP for sending mail of domain example.com"},
    {C::kReputationBlock, "554 5.7.1 192.0.2.1 is in a black list"},
    {C::kReputationBlock, "501 <s@example.com>... no access from mail server [192.0.2.1]"},
    {C::kReputationBlock, "550 5.7.1 Not currently accepting mail from your ip", "u@contoso.com"},
    {C::kReputationBlock,
     "550 5.7.1 Unfortunately, messages from [192.0.2.1] weren't sent. Please contact your "
     "Internet service provider since part of their network is on our block list (S3150).",
     "u@hotmail.com"},
    {C::kReputationBlock, "554 5.7.1 Please use the smtp server of your ISP"},
    {C::kReputationBlock, "554 5.7.1 Refused - see http://www.example.net/block"},
    {C::kReputationBlock, "554 5.7.1 Rejected - multi-blacklist"},
    {C::kReputationBlock, "554 5.7.1 Rejecting open proxy 192.0.2.1"},
    {C::kReputationBlock, "550 5.7.1 Sender IP address rejected"},
    {C::kReputationBlock, "554 5.7.1 Server access forbidden by your IP 192.0.2.1"},
    {C::kReputationBlock, "554 5.7.1 Sorry, your remotehost looks suspiciously like spammer"},
    {C::kReputationBlock, "550 5.7.1 Too many spams from your IP (192.0.2.1)", "u@free.fr"},
    {C::kReputationBlock,
     "554 5.7.1 Too many unwanted messages have been sent from the following IP address above"},
    {C::kReputationBlock, "550 5.7.1 Mail from 192.0.2.1 was blocked by example.net"},
    {C::kReputationBlock, "550 We do not accept mail from dynamic IPs", "u@mail.ru"},
    {C::kReputationBlock, "554 5.7.1 You are not allowed to connect"},
    {C::kReputationBlock, "554 5.7.1 You are sending spam"},
    {C::kReputationBlock, "554 5.7.1 Your IP address is listed in the RBL"},
    {C::kReputationBlock, "554 5.7.1 Your network is temporary blacklisted"},
    {C::kReputationBlock, "550 5.7.1 Access from ip address 192.0.2.1 blocked"},
    {C::kReputationBlock,
     "553 5.7.1 [BL21] Connections will not be accepted from 192.0.2.1, because the ip is in "
     "Spamhaus's list; see http://postmaster.yahoo.com/550-bl23.html",
     "u@yahoo.com"},
    {C::kReputationBlock, "554 5.7.1 Email blocked by zen.spamhaus.org"},
    {C::kReputationBlock, "550 5.7.1 IP 192.0.2.1 is blocked by EarthLink", "u@earthlink.net"},
    {C::kReputationBlock, "554 5.7.1 192.0.2.1 is in an RBL on rbl.example.net"},
    {C::kReputationBlock, "554 5.7.1 Mail server at 192.0.2.1 is blocked"},
    {C::kReputationBlock, "550 5.7.1 Message from 192.0.2.1 rejected based on blacklist"},
    {C::kReputationBlock, "554 5.7.1 Server IP 192.0.2.1 listed as abusive"},
    {C::kReputationBlock, "554 Sorry! Your IP address 192.0.2.1 is blocked by RBL"},
    {C::kReputationBlock, "554 5.7.1 The IP 192.0.2.1 is blacklisted"},
    {C::kReputationBlock, "554 5.7.1 Your access IP 192.0.2.1 has been rejected"},
    {C::kReputationBlock, "550 5.7.1 Your sender's IP address is listed at cbl.abuseat.org"},
    {C::kReputationBlock, "550 5.7.1 A poor email reputation score"},
    {C::kReputationBlock, "554 5.7.1 IP/domain reputation problems"},
    {C::kReputationBlock,
     "554 IP=192.0.2.1 - A problem occurred. (Ask your postmaster for help or "
     "to contact tosa@rx.t-online.de to clarify.) (none/bad reputation)",
     "u@t-online.de"},
    {C::kReputationBlock, "550 5.7.1 Rejected due to the sending MTA's poor reputation"},
    {C::kReputationBlock,
     "550-5.7.1 Our system has detected that this message is likely suspicious due to the very "
     "low reputation of the sending IP address. - gsmtp",
     "u@gmail.com"},
    {C::kReputationBlock,
     "421-4.7.0 This message is suspicious due to the very low reputation of the sending "
     "domain. - gsmtp",
     "u@gmail.com"},
    {C::kReputationBlock, "421 4.7.0 IP not in whitelist for RCPT domain, closing connection.",
     "u@gmail.com"},
    {C::kReputationBlock, "550 5.7.506 Access denied, bad HELO", "u@contoso.com"},
    {C::kReputationBlock, "550 5.7.510 Access denied, contoso.com does not accept email over IPv6",
     "u@contoso.com"},
    // Outlook.com's SC-001 names content and reputation together; Microsoft's code table (and
    // Sisimai's Rhost::Microsoft) files it under reputation.
    {C::kReputationBlock,
     "550 SC-001 Mail rejected by Outlook.com for policy reasons. Reasons for rejection may be "
     "related to content with spam-like characteristics or IP/domain reputation problems.",
     "u@outlook.com"},
    {C::kReputationBlock,
     "554 IP=192.0.2.1 - A problem occurred. (Ask your postmaster for help or to contact "
     "tosa@rx.t-online.de to clarify.) (BL)",
     "u@t-online.de"},
    {C::kReputationBlock, "550 5.7.511 Access denied, banned sender [192.0.2.1]", "u@contoso.com"},
    {C::kReputationBlock,
     "550 5.7.513 Service unavailable, Client host [192.0.2.1] blocked by contoso.com using "
     "Customer Block list (AS16012607)",
     "u@contoso.com"},
    {C::kReputationBlock,
     "550 5.7.507 Access denied, rejected by recipient. Your IP has been blocked by the "
     "recipient's organization",
     "u@contoso.com"},
    {C::kReputationBlock,
     "550 5.7.1 Mail from IP 192.0.2.1 was rejected due to listing in Spamhaus SBL.",
     "u@icloud.com"},
    {C::kReputationBlock,
     "550 5.7.1 Your email was rejected due to having a domain present in the Spamhaus DBL -- "
     "see https://www.spamhaus.org/dbl/",
     "u@icloud.com"},
    {C::kReputationBlock,
     "550 5.7.0 Blocked - see https://support.proofpoint.com/dnsbl-lookup.cgi?ip=192.0.2.1",
     "u@icloud.com"},
    {C::kReputationBlock,
     "554 Connection refused. This IP has a poor reputation on Cloudmark Sender Intelligence "
     "(CSI). IB103"},
    {C::kReputationBlock,
     "554 Connection refused. This IP address is listed on the Spamhaus Block List (SBL). IB104"},
    {C::kReputationBlock,
     "554 This IP has been temporarily blocked for attempting to send too many messages "
     "containing content judged to be spam by the Internet community. IB110"},
    {C::kReputationBlock, "554 RBL Reject."},
    {C::kReputationBlock, "554 5.7.1 192.0.2.1 has been blocked. AUP#CXBL", "u@cox.net"},
    // Cox's AUP# codes, one per cause (its postmaster error-code page).
    {C::kReputationBlock, "554 5.7.1 Rejected. AUP#IPBL0001", "u@cox.net"},
    {C::kReputationBlock, "421 4.7.1 Temporarily blocked. AUP#CDRBL", "u@cox.net"},
    {C::kRequirePtr, "554 5.7.1 Rejected. AUP#CXDNS", "u@cox.net"},
    {C::kAuthFailure, "554 5.7.1 Rejected. AUP#CXSNDR", "u@cox.net"},
    {C::kSenderRejected, "554 5.7.1 Rejected. AUP#CXSMTP", "u@cox.net"},
    {C::kRateLimited, "421 4.7.1 Too busy. AUP#CXCNCT", "u@cox.net"},
    {C::kRateLimited, "421 4.7.1 Try later. AUP#CXMXRT", "u@cox.net"},
    {C::kSecurityError, "554 5.7.1 Rejected. AUP#CXTHRT", "u@cox.net"},
    {C::kSpamContent, "554 5.7.1 Rejected. AUP#URLBL1001", "u@cox.net"},
    {C::kReputationBlock,
     "553-mail rejected because your IP is in the PBL. See http://www.spamhaus.org/pbl"},
    {C::kReputationBlock, "553 Sorry, your IP address has been blocked"},
    {C::kReputationBlock,
     "501 Connection rejected by policy [7.7] 20805, please visit www.messagelabs.com/support "
     "for more details about this error message."},
    {C::kReputationBlock,
     "550 mwinf5c04 ME Adresse IP source bloquee pour incident de spam. Client host blocked for "
     "spamming issues. OFR006_102 Ref http://csi.cloudmark.com",
     "u@orange.fr"},
    {C::kReputationBlock,
     "421 mwinf5c77 ME Service refuse. Veuillez essayer plus tard. Service refused, please try "
     "later. OFR_999 [999]",
     "u@orange.fr"},
    {C::kReputationBlock, "550 Suspected spam IP. https://service.mail.qq.com/detail/122/66",
     "u@qq.com"},
    {C::kReputationBlock, "451 IP temporarily blacklisted"},
    // Cloudflare Email Routing's postmaster page.
    {C::kReputationBlock, "550 5.7.1 192.0.2.1 found on one or more DNSBLs"},
    {C::kReputationBlock, "550 Local CT IP Reputation - (reject)"},
    {C::kReputationBlock,
     "554 5.7.1 IP address of the sender is blacklisted. https://mail.i.ua/err/9/", "u@i.ua"},

    // ---- auth_failure -------------------------------------------------------------------------
    // Sisimai's Reason::AuthFailure list; Gmail's authentication replies (4.7.26/27/30/32/40,
    // 5.7.26), Microsoft 5.7.23/509/515, Yahoo, iCloud, GoDaddy, MessageLabs, Mimecast,
    // Orange, Tencent.
    {C::kAuthFailure, "550 5.7.1 Please see http://spf.pobox.com/why.html?sender=s@example.com"},
    {C::kAuthFailure, "550 5.7.1 Bad SPF records for [example.com:192.0.2.1]"},
    {C::kAuthFailure, "550 5.7.1 Email rejected per DMARC policy for example.com"},
    {C::kAuthFailure,
     "550 5.7.515 Access denied, sending domain example.com doesn't meet the required "
     "authentication level.",
     "u@contoso.com"},
    {C::kAuthFailure, "550 5.7.1 Please inspect your SPF settings"},
    {C::kAuthFailure, "550 5.7.1 Sender Policy Framework (SPF) fail"},
    {C::kAuthFailure,
     "550 5.7.23 The message was rejected because of Sender Policy Framework "
     "violation",
     "u@contoso.com"},
    {C::kAuthFailure, "550 5.7.1 SPF (Sender Policy Framework) domain authentication fail"},
    {C::kAuthFailure, "550 5.7.1 SPF check: fail"},
    {C::kAuthFailure,
     "550 5.7.515 The 5322.From address doesn't meet the authentication requirements defined "
     "for the sender"},
    {C::kAuthFailure, "550 5.5.0 SPF: s@example.com is not allowed to send mail. LPN004_401",
     "u@laposte.net"},
    {C::kAuthFailure,
     "550 5.7.1 192.0.2.1 is not allowed to send from <example.com> per it's SPF Record"},
    {C::kAuthFailure,
     "451-4.7.24 The SPF record of the sending domain has one or more suspicious entries. - gsmtp",
     "u@gmail.com"},
    {C::kAuthFailure,
     "421-4.7.26 This mail has been rate limited because it is unauthenticated. Gmail requires "
     "all senders to authenticate with either SPF or DKIM. - gsmtp",
     "u@gmail.com"},
    {C::kAuthFailure,
     "550-5.7.26 This message fails to pass SPF checks for an SPF record with a hard fail "
     "policy (-all). - gsmtp",
     "u@gmail.com"},
    {C::kAuthFailure,
     "550-5.7.26 The MAIL FROM domain [example.com] has an SPF record with a hard fail policy "
     "(-all) but it fails to pass SPF checks with the ip: [192.0.2.1]. - gsmtp",
     "u@gmail.com"},
    {C::kAuthFailure,
     "550-5.7.26 Unauthenticated email from example.com is not accepted due to domain's DMARC "
     "policy. - gsmtp",
     "u@gmail.com"},
    {C::kAuthFailure,
     "550-5.7.26 This message does not have authentication information or fails to pass "
     "authentication checks (SPF or DKIM). - gsmtp",
     "u@gmail.com"},
    {C::kAuthFailure,
     "421-4.7.27 Your email has been rate limited because SPF authentication didn't pass for "
     "this message. Gmail requires all bulk email senders to authenticate their email with "
     "SPF. - gsmtp",
     "u@gmail.com"},
    {C::kAuthFailure,
     "421-4.7.30 Your email has been rate limited because DKIM authentication didn't pass for "
     "this message. Gmail requires all email bulk senders to authenticate their email with "
     "DKIM. - gsmtp",
     "u@gmail.com"},
    {C::kAuthFailure,
     "550-5.7.30 This mail has been blocked because DKIM does not pass. Gmail requires all "
     "large senders to authenticate with DKIM. - gsmtp",
     "u@gmail.com"},
    {C::kAuthFailure,
     "421-4.7.32 Your email has been rate limited because the From: header (RFC5322) in this "
     "message isn't aligned with either the authenticated SPF or DKIM organizational domain. - "
     "gsmtp",
     "u@gmail.com"},
    {C::kAuthFailure,
     "421-4.7.40 Your email has been rate limited because the sending domain doesn't have a "
     "DMARC record, or the DMARC record doesn't specify a DMARC policy. Gmail requires all bulk "
     "email senders to add a DMARC record to their sending domain. - gsmtp",
     "u@gmail.com"},
    {C::kAuthFailure,
     "451 4.7.26 Access denied, a message sent over IPv6 [2001:db8::1] must pass either SPF or "
     "DKIM validation, this message is not signed",
     "u@contoso.com"},
    {C::kAuthFailure,
     "550 5.7.509 Access denied, sending domain example.com does not pass DMARC verification "
     "and has a DMARC policy of reject.",
     "u@contoso.com"},
    {C::kAuthFailure,
     "550 5.7.9 This mail has been blocked because the sender is unauthenticated. Yahoo "
     "requires all senders to authenticate with either SPF or DKIM.",
     "u@yahoo.com"},
    {C::kAuthFailure,
     "554 5.7.1 Your message was rejected due to example.com's DMARC policy. See "
     "https://support.apple.com/en-us/HT204137",
     "u@icloud.com"},
    {C::kAuthFailure,
     "554 5.7.1 [HME1] This message was blocked for failing both SPF and DKIM authentication "
     "checks.",
     "u@icloud.com"},
    {C::kAuthFailure,
     "550 s@example.com Invalid SPF record. Inspect your SPF settings, and try again. IB508"},
    {C::kAuthFailure, "553 DMARC domain authentication fail"},
    {C::kAuthFailure, "550 SPF Sender Invalid - envelope rejected"},
    {C::kAuthFailure, "550 DKIM Sender Invalid - envelope rejected"},
    {C::kAuthFailure, "550 DMARC Sender Invalid - envelope rejected"},
    {C::kAuthFailure, "571 5.7.1 Message refused, DMARC verification Failed. LPN007_517",
     "u@laposte.net"},
    {C::kAuthFailure,
     "421 smtp.orange.fr [192.0.2.1] Emetteur invalide, Veuillez verifier la configuration "
     "SPF/DNS de votre nom de domaine. Invalid Sender. SPF check failed, please verify the "
     "SPF/DNS configuration for your domain name.",
     "u@orange.fr"},
    {C::kAuthFailure, "550 SPF check failed. https://service.mail.qq.com/detail/122/72",
     "u@qq.com"},
    {C::kAuthFailure, "550 DMARC check failed.", "u@qq.com"},
    {C::kAuthFailure, "550 5.7.1 SPF check failed: sender not authorized"},

    // ---- require_ptr --------------------------------------------------------------------------
    // Sisimai's Reason::RequirePTR list; Gmail (4.7.23, 5.7.25, IPv6), Microsoft 5.7.25, Cox,
    // GoDaddy, Spectrum.
    {C::kRequirePtr, "550 5.7.1 Access denied. IP name lookup failed [192.0.2.1]"},
    {C::kRequirePtr,
     "550 5.7.1 All mail servers must have a PTR record with a valid Reverse DNS entry."},
    {C::kRequirePtr, "550 5.7.1 Bad DNS PTR resource record"},
    {C::kRequirePtr, "450 4.7.1 Client host rejected: cannot find your hostname, [192.0.2.1]"},
    {C::kRequirePtr, "550 5.7.1 Cannot resolve your address."},
    {C::kRequirePtr, "550 5.7.1 Fix reverse DNS for 192.0.2.1"},
    {C::kRequirePtr, "550 5.7.1 We do not accept IPs with missing PTR records"},
    {C::kRequirePtr, "550 5.7.1 No PTR Record found."},
    {C::kRequirePtr, "550 5.7.1 Please get a custom reverse DNS name from your ISP for your host"},
    {C::kRequirePtr, "550 5.7.1 Reverse DNS failed"},
    {C::kRequirePtr, "550 5.7.1 Reverse DNS required"},
    {C::kRequirePtr, "550 5.7.1 Sender IP reverse lookup rejected"},
    {C::kRequirePtr,
     "550 5.7.1 This system will not accept messages from servers/devices with no reverse DNS"},
    {C::kRequirePtr, "550 5.7.1 Unresolvable relay host name 192.0.2.1"},
    {C::kRequirePtr,
     "550 5.7.1 We do not accept mail from hosts with dynamic IP or generic DNS PTR-records"},
    {C::kRequirePtr, "550 5.7.1 Domain example.com mismatches client IP"},
    {C::kRequirePtr, "450 4.7.1 DNS lookup failure: 192.0.2.1 - try again later"},
    {C::kRequirePtr, "550 5.7.1 Reverse DNS lookup for host 192.0.2.1 failed permanently"},
    {C::kRequirePtr,
     "550 5.7.1 Server access 192.0.2.1 forbidden by invalid RDNS record of your mail server"},
    {C::kRequirePtr, "550 5.7.1 Service permits no unverifyable sending IPs"},
    {C::kRequirePtr,
     "421-4.7.0 The IP address sending this message does not have a PTR record, or the "
     "corresponding forward DNS entry does not point to the sending IP. - gsmtp",
     "u@gmail.com"},
    {C::kRequirePtr,
     "421-4.7.23 The sending IP address for this message doesn't have a PTR record, or the PTR "
     "record's forward DNS entry doesn't match the sending IP address. - gsmtp",
     "u@gmail.com"},
    {C::kRequirePtr,
     "550-5.7.1 This message does not meet IPv6 sending guidelines regarding PTR records and "
     "authentication. - gsmtp",
     "u@gmail.com"},
    {C::kRequirePtr,
     "550-5.7.25 The sending IP does not match the IP address of the hostname specified in the "
     "pointer (PTR) record. - gsmtp",
     "u@gmail.com"},
    {C::kRequirePtr,
     "550 5.7.25 Access denied, the sending IPv6 address [2001:db8::1] must have a reverse DNS "
     "record",
     "u@contoso.com"},
    {C::kRequirePtr, "554 5.7.1 Rejected - no rDNS", "u@cox.net"},
    {C::kRequirePtr, "421 Temporarily rejected. Reverse DNS for this IP failed. IB108"},
    {C::kRequirePtr, "550 5.7.1 IP has no reverse DNS. AUP#I-1100", "u@charter.net"},

    // ---- tls_required -------------------------------------------------------------------------
    // Sisimai's Reason::FailedSTARTTLS list; Gmail, Exchange Online, Mimecast, MessageLabs.
    {C::kTlsRequired, "530 5.7.0 STARTTLS is required to send mail"},
    {C::kTlsRequired, "550 5.7.0 TLS required but not supported"},
    {C::kTlsRequired, "530 5.7.0 Must issue a STARTTLS command first. - gsmtp", "u@gmail.com"},
    {C::kTlsRequired, "421 4.7.0 TLS required for RCPT domain, closing connection. - gsmtp",
     "u@gmail.com"},
    {C::kTlsRequired,
     "421-4.7.29 Your email has been rate limited because this message wasn't sent over a TLS "
     "connection. Gmail requires all bulk email senders to use TLS/SSL for SMTP connections. - "
     "gsmtp",
     "u@gmail.com"},
    {C::kTlsRequired, "451 5.4.317 STARTTLS is required to send mail", "u@contoso.com"},
    {C::kTlsRequired, "553 This route requires encryption (TLS)"},
    {C::kTlsRequired, "553 This route requires TLS version 1.2 or greater"},
    {C::kTlsRequired, "451 TLS/SSLv3 Connection required. (#4.7.1)"},
    {C::kTlsRequired,
     "454 454 TLS missing certificate: error:0200100D:system library:fopen:Permission denied "
     "(#4.3.0) (state 9)."},

    // ---- security_error -----------------------------------------------------------------------
    // Sisimai's Reason::SecurityError list (SMTP AUTH and sending credentials); Gmail,
    // Exchange, GoDaddy, Mimecast, MessageLabs, Orange.
    {C::kSecurityError, "535 5.7.8 Authentication credentials invalid"},
    {C::kSecurityError, "535 5.7.8 Authentication failure"},
    {C::kSecurityError, "530 5.7.0 Authentication required"},
    {C::kSecurityError,
     "550 5.7.1 Please make sure you have authentication turned on in your email client"},
    {C::kSecurityError, "550 5.7.1 Unauthenticated senders not allowed"},
    {C::kSecurityError,
     "550 5.7.1 You are not authorized to send mail, authentication is required"},
    {C::kSecurityError,
     "SASL authentication failed; server mail.example.org[192.0.2.1] said: 535 5.7.8 Error: "
     "authentication failed"},
    {C::kSecurityError, "550 5.7.0 Code d'authentification invalide OFR_305", "u@orange.fr"},
    {C::kSecurityError, "550 5.5.0 Authentification requise. Authentication Required. LPN105_402",
     "u@laposte.net"},
    {C::kSecurityError, "454 4.7.0 Too many login attempts, please try again later. - gsmtp",
     "u@gmail.com"},
    {C::kSecurityError, "535 5.7.1 Application-specific password required. - gsmtp", "u@gmail.com"},
    {C::kSecurityError, "534 5.7.14 Please log in through your web browser and then try again.",
     "u@gmail.com"},
    {C::kSecurityError, "535 5.7.8 Username and Password not accepted. - gsmtp", "u@gmail.com"},
    {C::kSecurityError,
     "530 5.7.57 Client not authenticated to send anonymous mail during MAIL FROM",
     "u@contoso.com"},
    {C::kSecurityError, "550 5.7.3 Cannot achieve Exchange Server authentication", "u@contoso.com"},
    {C::kSecurityError, "535 Authentication not allowed on IBSMTP Servers. IB401"},
    {C::kSecurityError, "535 Incorrect authentication data"},
    {C::kSecurityError, "550 Submitter failed to authenticate"},
    {C::kSecurityError, "550 Please turn on SMTP Authentication in your mail client"},
    {C::kSecurityError, "Could not retrieve credentials"},

    // ---- sender_rejected ----------------------------------------------------------------------
    // Sisimai's Reason::Rejected list; Gmail, Exchange (5.1.7, 5.1.8, 5.7.12x-136), Yahoo,
    // iCloud, Orange, MessageLabs, Mimecast, GoDaddy, i.ua.
    {C::kSenderRejected, "550 5.7.1 Access denied (sender blacklisted)"},
    {C::kSenderRejected, "550 5.7.1 BATV failed to verify"},
    {C::kSenderRejected, "550 5.7.1 BATV validation failure"},
    {C::kSenderRejected,
     "550 5.7.1 Backscatter protection detected an invalid or expired email address"},
    {C::kSenderRejected, "550 Bogus mail from"},
    {C::kSenderRejected, "550 5.7.1 Can't determine Purported Responsible Address"},
    {C::kSenderRejected,
     "550 5.7.1 Connections not accepted from servers without a valid sender domain"},
    {C::kSenderRejected, "550 Denied by SecuMail Valid-Address-Filter"},
    {C::kSenderRejected, "553 5.1.8 Domain of sender address s@example.com does not exist"},
    {C::kSenderRejected, "550 5.7.1 Email address is on SenderFilterConfig list"},
    {C::kSenderRejected, "501 5.1.0 Emetteur invalide. Invalid Sender. OFR004_405 [405]",
     "u@orange.fr"},
    {C::kSenderRejected, "550 5.7.1 Empty envelope senders not allowed"},
    {C::kSenderRejected, "550 Error: no third-party DSNs"},
    {C::kSenderRejected, "550 example.com From: Domain is invalid. Provide a valid From: IB506"},
    {C::kSenderRejected, "553 5.1.8 Fully qualified email address required"},
    {C::kSenderRejected, "550 s@example.com is not a registered gateway user"},
    {C::kSenderRejected, "550 5.5.3 Mail from not owned by user. LPN105_421", "u@laposte.net"},
    {C::kSenderRejected, "554 Message rejected: Email address is not verified."},
    {C::kSenderRejected, "550 5.7.1 Null sender is not allowed"},
    {C::kSenderRejected, "550 Returned mail not accepted here"},
    {C::kSenderRejected, "550 5.7.1 Sender address has been blacklisted"},
    {C::kSenderRejected, "550 5.7.1 Sender email address rejected"},
    {C::kSenderRejected, "550 5.7.1 Sender is in my black list"},
    {C::kSenderRejected, "550 5.7.1 Sender is spammer"},
    {C::kSenderRejected, "550 5.7.1 Sender not pre-approved"},
    {C::kSenderRejected, "550 5.7.1 Sender rejected"},
    {C::kSenderRejected, "553 5.1.7 Sender domain is empty"},
    {C::kSenderRejected, "550 Verification failed for <s@example.com> Sender verify failed"},
    {C::kSenderRejected, "553 sorry, your envelope sender has been denied; sender was rejected"},
    {C::kSenderRejected, "553 5.1.7 Syntax error: empty email address"},
    {C::kSenderRejected, "550 The message has been rejected by BATV defense"},
    {C::kSenderRejected, "550 5.7.1 This server does not accept mail from s@example.com"},
    {C::kSenderRejected, "550 Transaction failed unsigned DSN for <s@example.com>"},
    {C::kSenderRejected, "553 5.1.8 Unroutable sender address"},
    {C::kSenderRejected, "550 You are not allowed to post to this mailing list"},
    {C::kSenderRejected, "550 5.7.1 You are sending to/from an address that has been blacklisted"},
    {C::kSenderRejected, "553 5.7.1 Your email address has been blacklisted"},
    {C::kSenderRejected,
     "550 5.7.0 Mail Sending denied. This error occurs if the sender account is disabled or not "
     "registered within your Google Workspace domain.",
     "u@gmail.com"},
    {C::kSenderRejected, "550 5.1.7 Unknown sender address", "u@contoso.com"},
    {C::kSenderRejected, "550 5.1.0 Sender denied", "u@contoso.com"},
    {C::kSenderRejected, "550 5.1.8 Access denied, bad outbound sender", "u@contoso.com"},
    {C::kSenderRejected, "550 5.7.124 Sender not in allowed-senders list", "u@contoso.com"},
    {C::kSenderRejected,
     "451 Message temporarily deferred due to unresolvable RFC.5321 from domain. See "
     "https://senders.yahooinc.com/error-codes#unresolvable-from-domain",
     "u@yahoo.com"},
    {C::kSenderRejected, "450 4.1.8 <s@example.com>: Sender address rejected: Domain not found",
     "u@icloud.com"},
    {C::kSenderRejected, "550 5.1.8 sender envelope domain not allowed for sender IP address"},
    {C::kSenderRejected, "553 Sorry, your domain has been blocked"},
    {C::kSenderRejected, "553 Sorry, your email address has been blocked"},
    {C::kSenderRejected, "553 sorry, your envelope sender is in my badmailfrom list (#5.7.1)"},
    {C::kSenderRejected, "553 Sorry, your domain has been blacklisted"},
    {C::kSenderRejected, "550 Administrative prohibition - envelope blocked"},
    {C::kSenderRejected, "550 Envelope rejected - Block policy for Envelope From address"},
    {C::kSenderRejected,
     "550 Rejected by header-based Blocked Senders - Block policy for Header From"},
    {C::kSenderRejected, "550 5.7.1 <s@example.com> sender rejected", "u@cox.net"},
    {C::kSenderRejected, "550 5.1.0 Couldn't check sender address. https://mail.i.ua/err/8/",
     "u@i.ua"},

    // ---- relay_denied -------------------------------------------------------------------------
    // Sisimai's Reason::NoRelaying list; Gmail's SMTP relay, Exchange, Yahoo, iCloud,
    // Mimecast, i.ua.
    {C::kRelayDenied,
     "550 5.7.1 You are trying to use me as a relay, but I have not been "
     "configured to let you do this"},
    {C::kRelayDenied,
     "550 5.7.1 This mail server requires authentication when attempting to send to a "
     "non-local e-mail address"},
    {C::kRelayDenied, "550 5.7.1 No relaying"},
    {C::kRelayDenied, "550 5.7.1 We are not a gateway"},
    {C::kRelayDenied, "550 5.7.1 Not allowed to relay through this machine"},
    {C::kRelayDenied, "550 5.7.1 This is not an open relay, so get lost"},
    {C::kRelayDenied, "550 5.7.1 Relay access denied"},
    {C::kRelayDenied, "550 5.7.1 Relay denied"},
    {C::kRelayDenied, "550 5.7.1 Relay not permitted"},
    {C::kRelayDenied, "550 5.7.1 <u@example.org>... Relaying denied"},
    {C::kRelayDenied, "553 sorry, that domain isn't in my list of allowed rcpthosts (#5.7.1)"},
    {C::kRelayDenied, "550 5.7.1 This system is not configured to relay mail"},
    {C::kRelayDenied, "550 5.7.1 Unable to relay for u@example.org"},
    {C::kRelayDenied, "550 5.7.1 We don't handle mail for example.org"},
    {C::kRelayDenied,
     "550 5.7.0 Mail relay denied [192.0.2.1]. Invalid credentials for relay "
     "for one of the domains in: example.com - gsmtp",
     "u@gmail.com"},
    {C::kRelayDenied, "550 5.7.1 Invalid credentials for relay [192.0.2.1]. - gsmtp",
     "u@gmail.com"},
    {C::kRelayDenied, "550 relaying denied for <u@yahoo.com>", "u@yahoo.com"},
    {C::kRelayDenied, "554 5.7.1 <u@icloud.com>: Relay access denied", "u@icloud.com"},
    {C::kRelayDenied, "550 5.7.64 TenantAttribution; Relay Access Denied", "u@contoso.com"},
    {C::kRelayDenied, "451 Open relay not allowed"},
    {C::kRelayDenied, "500 Remote server does not support SMTP Authenticated Relay (state 12)."},
    {C::kRelayDenied,
     "Could not be delivered to: <u@example.org> Due to the following SMTP relay error: 550 "
     "5.7.1 Relaying denied"},
    {C::kRelayDenied,
     "550 5.7.1 The use of SMTP as mail gate is forbidden. https://mail.i.ua/err/1/", "u@i.ua"},

    // ---- rate_limited -------------------------------------------------------------------------
    // Sisimai's Reason::RateLimited, Speeding and TooManyConn lists; Gmail (4.2.1, 4.5.3, 5.4.5),
    // Yahoo, iCloud, Exchange, Cox, GoDaddy, Mimecast, MessageLabs, Tencent, Orange.
    {C::kRateLimited, "550 5.7.1 s@example.com has exceeded the max emails per hour (100)"},
    {C::kRateLimited,
     "451 4.7.1 <mx.example.org[192.0.2.2]>: Client host rejected: Please try again slower"},
    {C::kRateLimited,
     "450-4.2.1 The user you are trying to contact is receiving mail at a rate that prevents "
     "additional messages from being delivered. - gsmtp",
     "u@gmail.com"},
    {C::kRateLimited, "454 Throttling failure: Daily message quota exceeded."},
    {C::kRateLimited, "454 Throttling failure: Maximum sending rate exceeded."},
    {C::kRateLimited, "421 Too many errors from your IP (192.0.2.1)", "u@free.fr"},
    {C::kRateLimited,
     "421 mwinf5c79 ME Trop de connexions, veuillez verifier votre configuration. Too many "
     "connections, slow down. OFR005_104 [104]",
     "u@orange.fr"},
    {C::kRateLimited, "421 All available IPs are at maximum connection limit"},
    {C::kRateLimited, "421 4.7.0 Connection rate limit exceeded"},
    {C::kRateLimited, "421 4.7.0 Exceeds per-domain connection limit for example.org"},
    {C::kRateLimited, "421 4.7.0 Too many connections"},
    {C::kRateLimited, "421 4.3.2 Too many connections from your host.", "u@contoso.com"},
    {C::kRateLimited, "421 4.7.0 Too many concurrent SMTP connections; please try again later"},
    {C::kRateLimited, "452 4.5.3 Too many recipients"},
    {C::kRateLimited, "421 4.7.0 Too many SMTP sessions for this host"},
    {C::kRateLimited, "421 4.7.0 Mail sent from your IP address has been temporarily rate limited"},
    {C::kRateLimited, "421 4.7.0 Connection limit exceeded"},
    {C::kRateLimited, "421 4.7.0 Your connection has been temporarily rate limited"},
    {C::kRateLimited, "421 4.2.0 Throttled - try again later. Please see postmaster.comcast.net",
     "u@comcast.net"},
    {C::kRateLimited, "421 4.7.0 Too many sessions opened"},
    {C::kRateLimited,
     "450-4.2.1 The user you are trying to contact is receiving mail too quickly. - gsmtp",
     "u@gmail.com"},
    {C::kRateLimited, "450-4.2.1 Peak SMTP relay limit exceeded for customer. - gsmtp",
     "u@gmail.com"},
    {C::kRateLimited, "550 5.4.5 Daily sending quota exceeded. - gsmtp", "u@gmail.com"},
    {C::kRateLimited, "550 5.4.5 Daily user sending limit exceeded. - gsmtp", "u@gmail.com"},
    {C::kRateLimited, "550 5.4.5 Daily SMTP relay limit exceeded for user. - gsmtp", "u@gmail.com"},
    {C::kRateLimited, "550-5.7.1 This mail has been rate limited. - gsmtp", "u@gmail.com"},
    {C::kRateLimited, "452-4.5.3 Your message has too many recipients. - gsmtp", "u@gmail.com"},
    {C::kRateLimited, "450 User is receiving mail too quickly", "u@yahoo.com"},
    {C::kRateLimited, "421 Max message per connection reached, closing transmission channel",
     "u@yahoo.com"},
    {C::kRateLimited,
     "421 4.7.1 Messages to u@icloud.com deferred due to excessive volume. Try again later - "
     "https://support.apple.com/en-us/HT204137",
     "u@icloud.com"},
    {C::kRateLimited, "550 5.5.3 Too many recipients", "u@contoso.com"},
    {C::kRateLimited, "432 4.3.2 STOREDRV.Deliver; recipient thread limit exceeded",
     "u@contoso.com"},
    {C::kRateLimited,
     "451 4.7.652 The mail server [192.0.2.1] has exceeded the maximum number of connections. "
     "(S3115)",
     "u@outlook.com"},
    {C::kRateLimited,
     "550 5.1.90 Your message can't be sent because you've reached your daily limit for "
     "message recipients",
     "u@contoso.com"},
    {C::kRateLimited, "550 5.2.2 Submission quota exceeded", "u@contoso.com"},
    {C::kRateLimited,
     "550 5.2.121 Recipient's per hour message receive limit from specific sender exceeded",
     "u@contoso.com"},
    {C::kRateLimited,
     "550 5.2.122 The recipient has exceeded their limit for the number of messages they can "
     "receive per hour",
     "u@contoso.com"},
    {C::kRateLimited,
     "550 5.7.508 Access denied, [192.0.2.1] has exceeded permitted limits within 2001:db8::/64 "
     "range",
     "u@contoso.com"},
    {C::kRateLimited, "421 4.7.0 Too many sessions from 192.0.2.1", "u@cox.net"},
    {C::kRateLimited, "452 4.5.3 Message threshold exceeded", "u@cox.net"},
    {C::kRateLimited,
     "452 This message contains too many recipients. Reduce the number of recipients and retry. "
     "IB605"},
    {C::kRateLimited,
     "421 Connection refused, too many sessions from This IP. Lower the number of concurrent "
     "sessions. IB007"},
    {C::kRateLimited, "550 This IP has sent too many messages this hour. IB504"},
    {C::kRateLimited,
     "550 This message has exceeded the max number of messages per session. Open a new session "
     "and try again. IB510"},
    {C::kRateLimited, "550 This IP has sent too many to too many recipients this hour. IB607"},
    {C::kRateLimited, "452 Too many recipients"},
    {C::kRateLimited, "552 too many recipients", "u@docomo.ne.jp"},
    {C::kRateLimited, "550 Exceeding outbound thread limit"},
    {C::kRateLimited, "452 Too many recipients received this hour"},
    {C::kRateLimited, "460 too many messages (#4.3.0)"},
    {C::kRateLimited,
     "550 Frequency of receiving messages is limited. https://service.mail.qq.com/detail/122/1011",
     "u@qq.com"},
    {C::kRateLimited, "451 IP frequency limited. https://service.mail.qq.com/detail/122/172",
     "u@qq.com"},
    {C::kRateLimited, "451 Connection frequency limited", "u@qq.com"},
    {C::kRateLimited, "550 5.7.1 Letter sending limit is exceeded. https://mail.i.ua/err/5/",
     "u@i.ua"},

    // ---- greylisted ---------------------------------------------------------------------------
    // Postgrey, Yahoo (GL01), and the greylisting wordings Sisimai lists among its patterns.
    {C::kGreylisted,
     "450 4.2.0 <u@example.org>: Recipient address rejected: Greylisted, see "
     "http://postgrey.schweikert.ch/help/example.org.html"},
    {C::kGreylisted, "451 4.7.1 Greylisted, please try again in 300 seconds"},
    {C::kGreylisted, "451 4.7.1 Please try again later, you are greylisted"},
    // Zoho's greylisting (Sisimai: blocked; the reply says greylisting, which retries pass).
    {C::kGreylisted, "451 4.7.1 Greylisted, try again after some time", "u@zoho.com"},
    {C::kGreylisted, "421 4.7.0 [GL01] Message from 192.0.2.1 temporarily deferred", "u@yahoo.com"},

    // ---- network_error ------------------------------------------------------------------------
    // Sisimai's Reason::NetworkError list; Gmail (5.4.6 hops), Exchange Online (4.4.312/316,
    // 5.4.14 loops), Mimecast.
    {C::kNetworkError, "Could not connect and send the mail to mx.example.org"},
    {C::kNetworkError, "554 5.4.4 DNS records for the destination computer could not be found"},
    {C::kNetworkError, "554 5.4.6 Hop count exceeded - possible mail loop"},
    {C::kNetworkError, "connect to mx.example.org[192.0.2.1]:25: Host is unreachable"},
    {C::kNetworkError,
     "Host or domain name not found. Name service error for name=example.org "
     "type=MX: Host not found, try again"},
    {C::kNetworkError, "mail forwarding loop for u@example.org"},
    {C::kNetworkError,
     "Name service error for name=example.org type=MX: Malformed or unexpected name server "
     "reply"},
    {C::kNetworkError, "Maximum forwarding loop count exceeded"},
    {C::kNetworkError, "554 5.4.6 Message looping"},
    {C::kNetworkError, "554 5.4.6 Message probably in a routing loop"},
    {C::kNetworkError, "connect to mx.example.org[192.0.2.1]:25: No route to host"},
    {C::kNetworkError, "554 5.4.6 Too many hops"},
    {C::kNetworkError, "554-5.4.6 Message exceeded 50 hops, this may indicate a mail loop. - gsmtp",
     "u@gmail.com"},
    {C::kNetworkError, "450 4.4.312 DNS query failed", "u@contoso.com"},
    {C::kNetworkError, "451 4.4.316 Connection refused [Message=Socket error code 10061]",
     "u@contoso.com"},
    {C::kNetworkError, "554 5.4.14 Hop count exceeded - possible mail loop ATTR34",
     "u@contoso.com"},
    {C::kNetworkError, "554 5.4.6 Routing loop detected", "u@contoso.com"},
    {C::kNetworkError, "554 Mail loop detected"},
    {C::kNetworkError, "connect to mx.example.org[192.0.2.1]:25: Connection timed out"},
    // Courier and OpenSMTPD name their own routing and DNS failures.
    {C::kNetworkError, "DNS lookup failed."},
    {C::kNetworkError, "Address family mismatch on destination MXs"},
    {C::kNetworkError, "All routes to destination blocked"},
    {C::kNetworkError, "bad DNS lookup error code"},
    {C::kNetworkError, "Could not retrieve source address"},
    {C::kNetworkError, "Loop detected"},
    {C::kNetworkError, "Network error on destination MXs"},
    {C::kNetworkError, "No valid route to remote MX"},
    {C::kNetworkError, "No valid route to destination"},
    {C::kNetworkError, "Message has exceeded maximum hop count"},
    {C::kNetworkError, "Temporary failure in MX lookup"},
    {C::kNetworkError,
     "Sorry. Although I'm listed as a best-preference MX or A for that host, it isn't in my "
     "control/locals file, so I don't treat it as local. (#5.4.6)"},

    // ---- expired ------------------------------------------------------------------------------
    // Sisimai's Reason::Expired list; Exchange (4.4.7, 5.4.300); GoDaddy. Each said by the MTA
    // that gave up.
    {C::kExpired, "Delivery expired (message too old)"},
    {C::kExpired, "Delivery time expired"},
    {C::kExpired, "Giving up on 192.0.2.1"},
    {C::kExpired, "All delivery attempts have been failing for a long time"},
    {C::kExpired, "Message expired after sitting in queue for 5 days"},
    {C::kExpired, "Message could not be delivered for 5 days"},
    {C::kExpired, "Message expired, cannot connect to remote server"},
    {C::kExpired, "Retry time not reached for any host after a long failure period"},
    {C::kExpired, "This message has been in the queue too long."},
    {C::kExpired, "Unable to deliver message after multiple retries"},
    {C::kExpired, "The server was not reachable within the allowed queue period"},
    {C::kExpired, "Your message could not be delivered for more than 5 days"},
    {C::kExpired, "550 4.4.7 QUEUE.Expired; message expired", "u@contoso.com"},
    {C::kExpired, "550 5.4.300 Message expired", "u@contoso.com"},
    {C::kExpired,
     "451 Sorry, I wasn't able to establish an SMTP connection. I'm not going to try again; "
     "this message has been in the queue too long."},
    {C::kExpired, "Delivery timeout"},
    {C::kExpired, "Envelope expired"},
    {C::kExpired, "Reason: delivery retry timeout exceeded", "u@gmx.de"},
    {C::kExpired,
     "Your message was not delivered within 0 days and 1 hours. Remote host is not "
     "responding.",
     "u@ezweb.ne.jp"},

    // ---- system_error -------------------------------------------------------------------------
    // Sisimai's Reason::SystemError, SystemFull and MailerError lists; Gmail's temporary system
    // problems; Exchange (4.3.1, 4.3.2, 5.3.5 ...); Cox; Mimecast.
    // Exchange Online's store, for the moment unable to take the message.
    {C::kSystemError, "554 5.2.0 STOREDRV.Deliver.Exception:StoreDriverRetireException",
     "u@hotmail.com"},
    {C::kSystemError, "554 5.0.0 aliasing/forwarding loop broken (11 aliases deep; 10 max)"},
    {C::kSystemError, "Can't create user output file"},
    {C::kSystemError, "451 4.3.0 Could not load DRD for domain example.org"},
    {C::kSystemError, "451 4.3.0 Internal error reading data", "u@contoso.com"},
    {C::kSystemError, "451 4.4.0 Internal server error: Operation now in progress"},
    {C::kSystemError, "451 4.3.0 Interrupted system call"},
    {C::kSystemError,
     "554 5.3.0 The message could not be delivered because it encountered an error while being "
     "processed"},
    {C::kSystemError,
     "553 5.3.5 mx.example.org. config error: mail loops back to me (MX problem?)"},
    {C::kSystemError, "451 4.3.5 Local configuration error"},
    {C::kSystemError, "451 4.3.0 Local error in processing"},
    {C::kSystemError, "554 5.3.5 Mail system configuration error"},
    {C::kSystemError, "451 4.3.0 Error: queue file write error"},
    {C::kSystemError, "451 4.3.0 Recipient deferred because there is no Mdb"},
    {C::kSystemError, "451 4.3.5 Server configuration error"},
    {C::kSystemError, "451 4.3.2 Service currently unavailable"},
    {C::kSystemError, "451 4.3.0 System config error"},
    {C::kSystemError, "451 Temporary local problem - please try later"},
    {C::kSystemError, "421 4.4.2 Timeout waiting for input"},
    {C::kSystemError, "554 Transaction failed "},
    {C::kSystemError, "451 4.3.0 Unable to connect to the LDAP daemon"},
    {C::kSystemError, "452 4.3.1 Mail system full"},
    {C::kSystemError, "452 4.3.1 Insufficient system resources", "u@contoso.com"},
    {C::kSystemError, "421-4.3.0 Temporary System Problem. Try again later. - gsmtp",
     "u@gmail.com"},
    {C::kSystemError, "421-4.4.5 Server busy, try again later. - gsmtp", "u@gmail.com"},
    {C::kSystemError,
     "451-4.3.0 Multiple destination domains per transaction is unsupported. Please try "
     "again. - gsmtp",
     "u@gmail.com"},
    {C::kSystemError, "451-4.3.0 Mail server temporarily rejected message. - gsmtp", "u@gmail.com"},
    {C::kSystemError,
     "452-4.5.3 Domain policy size per transaction exceeded, please try this recipient in a "
     "separate transaction. - gsmtp",
     "u@gmail.com"},
    {C::kSystemError, "421 4.3.2 Service not available", "u@contoso.com"},
    {C::kSystemError, "554 5.3.5 System incorrectly configured", "u@contoso.com"},
    {C::kSystemError, "550 5.1.4 Destination mailbox address ambiguous", "u@contoso.com"},
    {C::kSystemError, "550 5.2.4 Mailing list expansion problem", "u@contoso.com"},
    {C::kSystemError, "550 5.2.14 Misconfigured forwarding address", "u@contoso.com"},
    {C::kSystemError, "451 4.4.22 Message failed to be replicated: no healthy peers found",
     "u@outlook.com"},
    {C::kSystemError, "451 4.7.700 PFA agent busy, please try again.", "u@outlook.com"},
    {C::kSystemError, "421 4.3.2 ESMTP server temporarily not available", "u@cox.net"},
    {C::kSystemError, "451 Unable to process connection at this time"},
    {C::kSystemError, "451 Message ended early"},
    {C::kSystemError, "535 SMTP AUTH failed with the remote server. (state 8)."},
    {C::kSystemError, "451 4.3.0 Upstream error"},
    {C::kSystemError, "452 4.3.1 Temporary System Error", "u@zoho.com"},
    {C::kSystemError, "Command died with status 1: \"/usr/bin/filter\""},
    // qmail and qmail-ldap's own failures, Courier's DNS check, iMail's full disk.
    {C::kSystemError, "/usr/local/bin/filter: bad interpreter: No such file or directory"},
    {C::kSystemError, "Automatic homedir creator crashed (#4.3.0)"},
    {C::kSystemError, "Illegal value in LDAP attribute (#5.3.5)"},
    {C::kSystemError, "LDAP attribute is not given but mandatory (#5.3.5)"},
    {C::kSystemError, "Timeout while performing search on LDAP server (#4.4.3)"},
    {C::kSystemError, "Too many results returned but needs to be unique (#5.3.5)"},
    {C::kSystemError, "Permanent error while executing qmail-forward (#5.4.4)"},
    {C::kSystemError, "Temporary error in automatic homedir creation (#4.3.0)"},
    {C::kSystemError, "Temporary error while executing qmail-forward (#4.4.4)"},
    {C::kSystemError, "Temporary failure in LDAP lookup (#4.4.3)"},
    {C::kSystemError, "Unable to contact LDAP server (#4.4.3)"},
    {C::kSystemError, "Unable to login into LDAP server, bad credentials (#4.4.3)"},
    {C::kSystemError, "This domain's DNS violates RFC 1035."},
    {C::kSystemError,
     "452 Requested action not taken: mailbox unavailable (not enough free space)"},
    {C::kSystemError, "procmail: Quota exceeded while writing \"/var/spool/mail/u\""},
    {C::kSystemError, "pipe to |/usr/local/bin/filter u@example.org generated by u@example.org"},
    {C::kSystemError, "Mailer error: \"/usr/bin/deliver\" exited with status 75"},

    // ---- protocol_error -----------------------------------------------------------------------
    // Gmail's syntax and sequence replies; Exchange 5.3.3/5.5.2; Yahoo; Tencent; RFC 5321
    // 500-504 texts (Sisimai's Reason::SyntaxError goes by those reply codes).
    {C::kProtocolError,
     "523 5.7.10 SMTP protocol violation, no commands allowed to pipeline after STARTTLS. - "
     "gsmtp",
     "u@gmail.com"},
    {C::kProtocolError, "501 5.5.2 Syntax error, cannot decode response. - gsmtp", "u@gmail.com"},
    {C::kProtocolError, "501 5.7.11 Syntax error (no parameters allowed). - gsmtp", "u@gmail.com"},
    {C::kProtocolError, "502 5.5.1 Unrecognized command. - gsmtp", "u@gmail.com"},
    {C::kProtocolError, "502 5.5.1 Unimplemented command. - gsmtp", "u@gmail.com"},
    {C::kProtocolError, "503 5.5.1 Bad sequence of commands. - gsmtp", "u@gmail.com"},
    {C::kProtocolError, "503 5.5.1 EHLO/HELO first. - gsmtp", "u@gmail.com"},
    {C::kProtocolError, "503 5.5.1 No DATA after BDAT. - gsmtp", "u@gmail.com"},
    {C::kProtocolError, "501 5.5.4 HELO/EHLO argument is invalid. - gsmtp", "u@gmail.com"},
    {C::kProtocolError, "500 5.3.3 Unrecognized command", "u@contoso.com"},
    {C::kProtocolError, "503 5.5.2 Send hello first", "u@contoso.com"},
    {C::kProtocolError, "501 Syntax error in parameters or arguments", "u@yahoo.com"},
    {C::kProtocolError, "501 Bad address syntax. https://service.mail.qq.com/detail/122/167",
     "u@qq.com"},
    {C::kProtocolError, "500 5.5.1 Command unrecognized"},
    {C::kProtocolError, "504 5.5.2 Command parameter not implemented"},

    // ---- suppressed_upstream ------------------------------------------------------------------
    // Amazon SES's and other sending services' own suppression notices.
    {C::kSuppressedUpstream,
     "Amazon SES has suppressed sending to this address because it has a recent history of "
     "bouncing as an invalid address."},
    {C::kSuppressedUpstream, "550 5.1.1 The address is on the account-level suppression list"},

    // ---- delivered ----------------------------------------------------------------------------
    // RFC 3463 class 2.
    {C::kDelivered, "250 2.0.0 OK 1700000000 x12si3456 - gsmtp", "u@gmail.com"},
    {C::kDelivered, "250 2.6.0 <id@example.com> [InternalId=1] Queued mail for delivery",
     "u@outlook.com"},

    // ---- other languages ----------------------------------------------------------------------
    // The same reasons as servers word them in their own language (no enhanced code, so the
    // words decide), capitalised as they come: the engine folds Latin, Greek and Cyrillic
    // capitals. Everyday phrasing in each language; a few from hosting forums quoting them.
    {C::kUserUnknown, "550 Usuario desconocido"},
    {C::kUserUnknown, "550 El usuario no existe"},
    {C::kUserUnknown, "550 Usuário inexistente"},
    {C::kUserUnknown, "550 Utente inesistente"},
    {C::kUserUnknown, "550 Destinataire inconnu"},
    {C::kUserUnknown, "550 L'adresse u@example.org n'existe pas"},
    {C::kUserUnknown, "550 Postfach nicht vorhanden"},
    {C::kUserUnknown, "550 Gebruiker onbekend"},
    {C::kUserUnknown, "550 Nie ma takiego użytkownika"},
    {C::kUserUnknown, "550 Uživatel neexistuje"},
    {C::kUserUnknown, "550 Kullanıcı bulunamadı"},
    {C::kUserUnknown, "550 Пользователь не найден"},
    {C::kUserUnknown, "550 НЕТ ТАКОГО ПОЛЬЗОВАТЕЛЯ"},
    {C::kUserUnknown, "550 用户不存在", "u@163.com"},
    {C::kUserUnknown, "550 收件人不存在"},
    {C::kUserUnknown, "550 宛先のメールアドレスは存在しません"},
    // "ユーザー?" in the rule: the long-vowel mark is one optional character of three bytes.
    {C::kUserUnknown, "550 そのようなユーザはいません"},
    {C::kUserUnknown, "550 사용자가 존재하지 않습니다"},
    {C::kDomainUnknown, "550 El dominio no existe"},
    {C::kDomainUnknown, "550 Le domaine example.org n'existe pas"},
    {C::kDomainUnknown, "550 Domain unbekannt"},
    {C::kDomainUnknown, "550 Домен не найден"},
    {C::kDomainUnknown, "550 域名不存在"},
    {C::kMailboxFull, "552 Buzón lleno"},
    {C::kMailboxFull, "552 Caixa postal cheia"},
    {C::kMailboxFull, "552 Casella piena"},
    {C::kMailboxFull, "552 BOÎTE AUX LETTRES PLEINE"},
    {C::kMailboxFull, "552 Postfach ist voll"},
    {C::kMailboxFull, "552 Speicherplatz überschritten"},
    {C::kMailboxFull, "552 Mailbox is vol"},
    {C::kMailboxFull, "552 Skrzynka odbiorcy jest pełna"},
    {C::kMailboxFull, "552 Почтовый ящик переполнен"},
    {C::kMailboxFull, "552 邮箱空间不足"},
    {C::kMailboxFull, "552 メールボックスの容量がいっぱいです"},
    {C::kMailboxDisabled, "550 Cuenta desactivada"},
    {C::kMailboxDisabled, "550 Das Postfach ist gesperrt"},
    {C::kMailboxDisabled, "550 Le compte est désactivé"},
    {C::kMailboxDisabled, "550 Konto nieaktywne"},
    {C::kMailboxDisabled, "550 Аккаунт получателя заблокирован"},
    {C::kMailboxDisabled, "550 帐户已被冻结"},
    {C::kSpamContent, "554 Сообщение отклонено как СПАМ"},
    {C::kSpamContent, "554 垃圾邮件"},
    {C::kMessageTooLarge, "552 Nachricht ist zu groß"},
    {C::kMessageTooLarge, "552 Message trop volumineux"},
    {C::kMessageTooLarge, "552 El mensaje es demasiado grande"},
    {C::kMessageTooLarge, "552 Размер сообщения превышает допустимый"},
    {C::kMessageTooLarge, "552 邮件大小超过限制"},
    {C::kRelayDenied, "554 Relaying nicht erlaubt"},
    {C::kRelayDenied, "554 Relais interdit"},
    {C::kRelayDenied, "554 不允许转发"},
    {C::kGreylisted, "451 Вы попали в серый список, повторите попытку позже"},
    // After DATA the words are a filter's, unless an x.1.x status says otherwise.
    {C::kUndetermined, "550 Usuario desconocido", "u@example.org", "eom"},
    {C::kUserUnknown, "550 5.1.1 Usuario desconocido", "u@example.org", "eom"},
    // The sender's own account, not the recipient's: no rule of these takes it.
    {C::kUndetermined, "550 Ваш аккаунт заблокирован"},
    {C::kUndetermined, "550 Ihr Konto ist gesperrt"},
};

Result ClassifyPhrase(const Phrase& p) {
  ReplyInput in;
  in.diagnostic = p.text;
  in.recipient = p.recipient;
  in.stage = p.stage;
  return RuleSet::Default()->Classify(in);
}

TEST(ReplyPhrases, EachPublishedPhraseGetsItsCategory) {
  int failures = 0;
  for (const Phrase& p : kPhrases) {
    Result r = ClassifyPhrase(p);
    if (r.category != p.want) ++failures;
    EXPECT_EQ(ToString(r.category), ToString(p.want))
        << "rule " << r.rule << " for: " << p.text << " (" << p.recipient << ")";
  }
  EXPECT_EQ(failures, 0);
}

// The table covers every category a remote reply can carry (complaint and auto_reply come from
// the report type, undetermined from nothing matching, expired also from Postfix's status).
TEST(ReplyPhrases, CoverEveryReplyCategory) {
  std::vector<int> count(kCategoryCount, 0);
  for (const Phrase& p : kPhrases) ++count[static_cast<int>(p.want)];
  for (int i = 0; i < kCategoryCount; ++i) {
    Category c = static_cast<Category>(i);
    if (c == Category::kComplaint || c == Category::kAutoReply || c == Category::kUndetermined)
      continue;
    EXPECT_GT(count[i], 0) << ToString(c);
  }
  EXPECT_GE(std::size(kPhrases), 300u);
}

// A block on our reputation, policy or authentication never suppresses the address, whatever
// status the reply carries; only recipient-side categories may.
TEST(ReplyPhrases, SenderSideRepliesNeverSuppress) {
  for (const Phrase& p : kPhrases) {
    Result r = ClassifyPhrase(p);
    if (r.fault() == Fault::kSender) {
      EXPECT_NE(r.action(), Action::kSuppress) << p.text;
      EXPECT_FALSE(r.hard_bounce()) << p.text;
    }
  }
}

// A reply the rules recognise as a block of our reputation, policy, content or setup stays that
// even when the DSN's Status: field says 5.1.1: the words name the cause, the status does not.
TEST(ReplyPhrases, SenderSideWordsOutweighAUserUnknownStatus) {
  for (const Phrase& p : kPhrases) {
    Result plain = ClassifyPhrase(p);
    // filtered holds unconfirmed "user unknown" words, which a 5.1.1 does confirm.
    if (plain.fault() != Fault::kSender && p.want != Category::kRateLimited) continue;
    if (p.want == Category::kFiltered) continue;
    ReplyInput in;
    in.diagnostic = p.text;
    in.recipient = p.recipient;
    in.stage = p.stage;
    in.status = "5.1.1";
    Result r = RuleSet::Default()->Classify(in);
    EXPECT_NE(r.category, Category::kUserUnknown) << "rule " << r.rule << " for: " << p.text;
  }
}

// Wordings close to the phrases above that mean something else keep their own category.
TEST(ReplyPhrases, NearMissesKeepTheirCategory) {
  struct NearMiss {
    const char* text;
    Category want;
  };
  for (const NearMiss& n : {
           NearMiss{"550 5.7.1 Your message was blocked by the recipient's filter", C::kFiltered},
           NearMiss{"554 5.7.1 This server does not accept mail from your IP address",
                    C::kReputationBlock},
           NearMiss{"550 5.7.1 Message failed to authenticate via SPF", C::kAuthFailure},
           NearMiss{"550 5.7.1 Spam message was blocked by our content filter", C::kSpamContent},
           NearMiss{"552 5.2.2 The user has exceeded their limit for storage", C::kMailboxFull},
       }) {
    ReplyInput in;
    in.diagnostic = n.text;
    in.recipient = "u@example.org";
    Result r = RuleSet::Default()->Classify(in);
    EXPECT_EQ(ToString(r.category), ToString(n.want)) << "rule " << r.rule << " for: " << n.text;
  }
}

// "Does not accept mail" words that are about something other than the domain (a transport, an
// attachment, our IP, our sender) must not become not_accept, which suppresses the address.
TEST(ReplyPhrases, NotAcceptOnlyWhenTheDomainTakesNoMail) {
  for (const char* text : {
           "550 5.7.510 Access denied, contoso.com does not accept email over IPv6",
           "554 5.7.1 Your mail could not be delivered because the recipient is not accepting "
           "mail with attachments or embedded images",
           "550 We do not accept mail from dynamic IPs",
           "550 5.7.1 This server does not accept mail from s@example.com",
           "554 5.7.1 This server does not accept mail from your IP address",
       }) {
    ReplyInput in;
    in.diagnostic = text;
    in.recipient = "u@example.org";
    Result r = RuleSet::Default()->Classify(in);
    EXPECT_NE(r.category, Category::kNotAccept) << text;
    EXPECT_NE(r.action(), Action::kSuppress) << text;
  }
}

}  // namespace
}  // namespace bounced
