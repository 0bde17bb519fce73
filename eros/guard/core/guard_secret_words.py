"""The words that announce a secret (:mod:`eros.guard.core.guard_secrets` validates what follows
them): identity-number words, words for a one-time code or a PIN, password words — in the
languages the red-team sets are written in and their neighbours.

A code word is no code word where the number beside it is a postcode ("zip code 90210",
"código postal", an Indian "पिन 110017" — PIN is India's postal index number — with no bank
word in the text): :func:`announces_code` leaves those out.
"""

from __future__ import annotations

import re
import unicodedata

from eros.guard.core.guard_literals import CaseFreeStrings

# an identity number announced as one is a secret even when its checksum fails (a typo, a
# scheme stdnum does not know): the word, then within a few characters a run of 6+ digits
# (grouped by spaces or dashes; 9+ when dots or slashes group them — a CPF is written
# 529.982.247-25, a date 12.05.2027 is not an identity number) or an alphanumeric code of 11-16
# characters with a digit (an Italian codice fiscale)
_ID_NAMES = (
    r"(?:\b(?:ssn|social security(?: number)?|passport(?: number| no\.?)?|national id|"
    r"id (?:card|number)|dni|nie|cpf|codice fiscale|tc kimlik(?: no)?|personalausweis\w*|"
    r"ausweisnummer\w*|pesel|"
    r"паспорт|снилс|инн|cccd|cmnd|henkilötunnu\w*|hetu|cnp(?:-ul)?|személyi (?:szám\w*|"
    r"azonosító\w*)|adóazonosító(?: jel)?|taj[- ]?szám\w*|rodné číslo|rodne cislo|"
    r"personnumm?er\w*|personnumret|samordningsnummer\w*|personnr|cpr(?:-nummer)?|"
    r"fødselsnummer\w*|fødselsnr|burgerservicenummer|bsn|nik|aadhaar|"
    r"kimlik numara\w*|rnokpp|рнокпп|ідентифікаційний код|oib|isikukood\w*|"
    r"rijksregisternummer|numéro (?:de registre )?national|rut|(?:numéro de )?sécurité sociale|"
    r"nir|αμκα|αφμ|کد ?ملی|شماره ملی|תעודת ה?זהות|"
    # the eighth round: the Bulgarian EGN, the former Yugoslav JMBG / EMŠO, the Baltic personal
    # codes, the Icelandic kennitala, the Irish PPS number, the Portuguese and Spanish NIF,
    # Singapore's NRIC, Hong Kong's HKID, Pakistan's CNIC, Kazakhstan's IIN, Uzbekistan's
    # PINFL, Kenya's kitambulisho, Nigeria's NIN, Malaysia's MyKad
    r"егн|egn|jmbg|јмбг|ембг|embg|emšo|emso|asmens kod\w*|personas kod\w*|kennitala\w*|"
    r"ppsn?|pps number|nif|número de contribuinte|contribuinte|nric|hkid|cnic|иин|жсн|"
    r"пинфл|jshshir|kitambulisho|nin(?: number| no\.?)|national identification number|"
    r"mykad|(?:nombor |no\.? )?kad pengenalan|"
    # the national numbers round (guard_secret_national.py): the German Steuer-ID, the Dutch
    # sofinummer, the Danish CPR abbreviated, the French INSEE number, the Turkish TCKN, the
    # Aadhaar misspelt, the Vietnamese, Indonesian and Baltic names, and English descriptions
    r"steuer-?id(?:-?nr)?|steuer-?identifikationsnummer\w*|identifikationsnummer\w*|idnr|"
    r"steuernummer\w*|sofi-?nummer\w*|bsn-nummer|cpr-nr|numéro insee|carte vitale|"
    r"seguridad social|número de identificación fiscal|cartão de cidadão|tckn|t\.c\. kimlik|"
    r"kimlik no|teudat zehut|aadhar|identity number|identification number|personal code|"
    # the eighteenth round: the Turkish "TC no", the Hebrew "identity number"
    r"tc no|מספר (?:ה)?זהות|"
    r"personal (?:id|identity|identification) (?:number|code)|citizen service number|"
    r"tax (?:id|identification number)|id (?:no|nr)|căn cước(?: công dân)?|"
    r"chứng minh nhân dân|nomor induk kependudukan|ktp|личный код|"
    # the ninth round: Canada's SIN and Australia's TFN by their names
    r"social insurance number|tax file number|tfn)\b|ת\.ז\.?|身份证号?码?|身份證號?碼?|居民身份证|"
    # the Hebrew ID's initials with gershayim or a quote (the eleventh round)
    r"ת[\"״׳']ז|"
    r"身分證(?:字號|號碼)?|证件号码?|證件號碼?|주민(?:등록)?번호|マイナンバー|個人番号|"
    r"الرقم الوطني|الرقم القومي|رقم الهوية|شناختی کارڈ|आधार|ആധാർ|ஆதார்|ఆధార్|ಆಧಾರ್|আধার|"
    r"આધાર|ਆਧਾਰ|ଆଧାର|জাতীয় পরিচয়|नागरिकता|პირადი ნომერი|"
    r"เลขบัตรประชาชน|บัตรประชาชน|เลขประจำตัวประชาชน)")
ID_WORD = re.compile(
    _ID_NAMES + r"[^\d\n]{0,32}"
    r"(?P<number>\d[\d -]{5,}|\d(?:[ .\-/]?\d){8,}|\b(?=[a-z0-9]{11,16}\b)[a-z]*\d[a-z0-9]*)",
    re.IGNORECASE)
#: a word for an identity number alone (eros/guard/core/guard_secret_national.py looks for
#: one around a number that passes a national checksum)
ID_NAME = re.compile(_ID_NAMES, re.IGNORECASE)
ID_NAMES = CaseFreeStrings(ID_NAME)
#: whether ID_WORD could match a text, by its words (a search of it tries each word at every
#: position: eros/guard/core/guard_literals.py)
ID_WORDS = CaseFreeStrings(ID_WORD)
_CODE = (r"(?:код\w*|kód\w*|kod\w*|kode|koodi\w*|kood\w*|code|codice|código|cod|κωδικ\w*|"
         r"κώδικ\w*|קוד|کد|कोड|কোড|รหัส|コード|코드)")
# what makes a code a one-time code: a text message, a bank, "one-time", "verification"
_ONE_TIME = (r"(?:sms|смс|otp|blik|банк\w*|bank\w*|banc\w*|одноразов\w*|однократн\w*|jednoraz\w*|"
             r"jednoráz\w*|jednokratn\w*|enkratn\w*|еднократ\w*|једнократ\w*|egyszer\w*|"
             r"tek kullanımlık|sekali pakai|vienkartin\w*|vienreizēj\w*|ühekordn\w*|"
             r"kertakäyttö\w*|verif\w*|верифик\w*|подтвержд\w*|підтвердж\w*|потвърж\w*|"
             r"ověř\w*|overov\w*|weryfik\w*|megerősít\w*|potvrd\w*|растау\w*|μιας χρήσης|"
             r"חד[- ]פעמי|یکبار مصرف|تایید|एक बार|ครั้งเดียว|ワンタイム|일회용)")
_ATM = (r"(?:\bATM\b|банкомат\w*|एटीएम|এটিএম|ਏਟੀਐਮ|એટીએમ|ଏଟିଏମ|ஏடிஎம்|ఏటీఎం|ఏటిఎం|ಎಟಿಎಂ|"
        r"എടിഎം|ඒටීඑම්|اے ٹی ایم|ای تی ام|เอทีเอ็ม|အေတီအမ်|ኤቲኤም|כספומט|ΑΤΜ|ბანკომატ\w*|"
        r"բանկոմատ\w*)")
# a code as borrowed scripts write it (no \b: vowel signs and viramas break it), and PIN
_CODE_LOAN = (r"(?:pin|код|kod|kode|code|कोड|পিন|কোড|ਕੋਡ|ਪਿੰਨ|ਪਿਨ|કોડ|પિન|କୋଡ|ପିନ|கோட்|பின்|"
              r"కోడ్|పిన్|ಕೋಡ್|ಪಿನ್|കോഡ്|പിൻ|කේත|පින්|کوڈ|کد|پن|پین|รหัส|โค้ด|កូដ|ລະຫັດ|ကုဒ်|"
              r"ပင်|ኮድ|ፒን|קוד|კოდ|կոդ)")
# PIN alone (a Tamil or Sinhala PIN-like word means something else there: only beside ATM)
_PIN_LOAN = r"(?:ਪਿੰਨ|ਪਿਨ|ପିନ|పిన్|ಪಿನ್|പിൻ|(?<!\S)پن(?!\S)|(?<!\S)پین(?!\S))"
CODE_WORD = re.compile(
    r"\b(?:otp|one[- ]time|verification|security|auth(?:entication)?|login|2fa|sms) ?(?:code|pin)"
    r"|\b(?:code|pin\d?|otp|pin-?code|pin-?kod\w*|pin-?koodi?\w*|pinkode|пин(?:-код)?\w*)\b|"
    # the eighteenth round: a second factor's spare codes, and a bank's transaction number (the
    # German TAN, in capitals: "tan" is a colour)
    r"\b(?:backup|recovery|spare|2fa|two-factor) codes?\b|(?-i:\b(?:m|push|sms|i)?TAN\b)|"
    r"पिन|পিন|ፒን|验证码|驗證碼|动态码|認証コード|確認コード|ワンタイム|인증번호|인증 ?코드|"
    r"código|code de (?:vérification|confirmation)|bestätigungscode|verifizierungscode|"
    r"код (?:подтверждения|из смс)|رمز التحقق|ओटीपी|codice (?:di verifica|otp)|"
    r"doğrulama kodu|mã (?:xác (?:minh|nhận)|otp)|"
    # a code word beside what makes it one-time, either order, a few words apart ("банк
    # коды", "Jednorazový kód … z SMS"); engangskode (da, no), engångskod (sv)
    rf"{_CODE}\W+(?:\w+\W+){{0,3}}?{_ONE_TIME}|{_ONE_TIME}\W+(?:\w+\W+){{0,3}}?{_CODE}|"
    r"engangskode\w*|engångskod\w*|"
    # the banking loanwords: ATM beside a code word, and PIN, as each script writes them (the
    # words are borrowed, so one spelling a script serves every language written in it)
    rf"{_ATM}\W*(?:\w+\W+)?{_CODE_LOAN}|{_CODE_LOAN}\W*(?:\w+\W+)?{_ATM}|{_PIN_LOAN}",
    re.IGNORECASE)
CODE_WORDS = CaseFreeStrings(CODE_WORD)
# a postcode's own words: the number beside them is where someone lives, not a code
_POSTAL = re.compile(
    r"\b(?:zip|postal|post ?code|postcode|postleitzahl|plz|code postal|código postal|"
    r"codice postale|cap|cep|pocztow\w*|почтов\w*|поштов\w*|індекс\w*|индекс\w*|psč|"
    r"irányítószám\w*|postnummer|postinumero\w*|posta kodu|poskod|kode pos|mã bưu\w*|"
    r"poștal|ταχυδρομ\w*|מיקוד|کد پستی|الرمز البريدي|رمز بريدي)\b|पिन ?कोड|पिनकोड|পিন ?কোড|"
    r"ਪਿੰਨ ?ਕੋਡ|郵便番号|邮编|郵遞區號|우편번호|รหัสไปรษณีย์", re.IGNORECASE)
# India's PIN is its postal index number: six digits after the word, no bank in sight
_INDIAN_PIN = re.compile(r"(?:पिन|পিন|ਪਿੰਨ|ਪਿਨ|પિન|ପିନ|పిన్|ಪಿನ್|പിൻ)\W{0,3}[1-9]\d{5}(?!\d)")
_BANKING = re.compile(rf"\b(?:atm|upi|bank\w*|card|debit|credit|otp)\b|एटीएम|यूपीआई|बैंक|"
                      rf"कार्ड|डेबिट|এটিএম|ব্যাংক|কার্ড|ਬੈਂਕ|બેંક|{_ATM}", re.IGNORECASE)


def announces_code(raw: str) -> bool:
    """A word for a one-time code or a PIN in ``raw`` that is no postcode's."""
    if not CODE_WORDS.may_match(raw):
        return False
    for match in CODE_WORD.finditer(raw):
        around = raw[max(0, match.start() - 20):match.end() + 20]
        if _POSTAL.search(around):
            continue
        if _INDIAN_PIN.match(raw, match.start()) and not _BANKING.search(raw):
            continue
        return True
    return False


PASSWORD = re.compile(unicodedata.normalize("NFKC",
    r"(?:\b(?:password|passcode|passwort|kennwort|pwd|contraseña|contrasenya|clave|mot de passe|"
    r"mdp|пароль|كلمة (?:المرور|السر)|पासवर्ड|senha|parola d'ordine|şifre\w*|sifre\w*|şifrə\w*|"
    r"mật khẩu|wachtwoord|wagwoord|hasło|lösenord|pin|jelsz(?:ó|ava|avam|avát)|salasana\w*|"
    r"heslo|hesla|geslo|parolă|parola (?:mea|ei|lui|de la|contului|de acces)|parole\w*|"
    r"slaptažod\w*|adgangskode\w*|kodeord\w*|passord\w*|lykilorð\w*|pasfhocal\w*|"
    r"pasahitz\w*|cyfrinair|fjalëkalim\w*|συνθηματικό|κωδικός πρόσβασης|ה?סיסמ[האת]|"
    r"رمز عبور|گذرواژه|kata sandi|kata laluan|nenosiri|iphasiwedi|kalmar sirri|รหัสผ่าน|"
    r"পাসওয়ার্ড|heslo k \w+|პაროლ\w*|գաղտնաբառ\w*|парола|lozinka|лозинка|parool\w*|"
    r"құпия сөз|нууц үг|پاس ?ورڈ|ọ̀rọ̀ aṣínà|የይለፍ ቃል|"
    # the nineteenth round: "password" as Igbo borrows it, the Malagasy "secret word"
    r"paswọọdụ|paswọdụ|tenimiafin\w*|"
    # the eighth round: Uzbek, Kurdish, Kyrgyz, Pashto
    r"parol|parolim\w*|parolingiz\w*|şîfre\w*|сырсөз\w*|پټنوم|"
    # the ninth round: "password" as Pashto and Yiddish borrow it
    r"پاسورډ|פּ?אַ?ראָל|"
    # the eleventh round: a PIN named as the "secret number / secret code" most languages call
    # it (German Geheimzahl, Swahili namba ya siri, Arabic الرقم السري, Hebrew קוד סודי, …),
    # and the Persian رمز of a card, an account or a login
    r"geheimzahl|geheimnummer|número secreto|clave secreta|código secreto|code secret|"
    r"code confidentiel|codice segreto|mã bí mật|nomor rahasia|kode rahasia|nombor rahsia|"
    r"nambari ya siri|namba ya siri|lambar sirri|секретн\w+ код|"
    r"(?:ال)?(?:رقم|رمز)\w{0,3} (?:ال)?سري|ה?(?:קוד|מספר) ה?סודי|"
    r"رمز (?:کارت|دوم|اول|پویا|حساب|ورود|عابر ?بانک)|"
    # Greek "κωδικός" alone is also a postcode's word: only a Wi-Fi's, an account's or a mail's
    r"κωδικός (?:του )?(?:wi-?fi|e-?mail|email|λογαριασμού))\b|"
    # scripts whose words \b does not bound (vowel signs, viramas, no word gaps): Tamil,
    # Telugu, Gujarati, Punjabi, Kannada, Malayalam, Odia, Burmese, Amharic (any possessor)
    r"கடவுச்சொல்|పాస్\u200cవర్డ్|పాస్వర్డ్|પાસવર્ડ|ਪਾਸਵਰਡ|ಪಾಸ್\u200cವರ್ಡ್|ಪಾಸ್ವರ್ಡ್|ಗುಪ್ತಪದ|"
    r"പാസ്\u200cവേഡ്|പാസ്വേഡ്|ପାସୱାର୍ଡ|စကားဝှက်|ይለፍ ቃ[ልሌ]|"
    # Tibetan "secret number" and "secret word", Amharic "secret number" (the eleventh round)
    r"གསང་ཨང|གསང་ཚིག|(?:የ)?ሚስጥር ቁጥር|"
    r"密码|密碼|口令|パスワード|暗証番号|비밀번호|비번|암호|මුරපදය|ពាក្យសម្ងាត់|ລະຫັດຜ່ານ)"),
    re.IGNORECASE)
PASSWORD_WORDS = CaseFreeStrings(PASSWORD)


# A security question's answer is a credential, whatever it is (a pet's name, a town): the words
# for a security or secret question or answer (the nineteenth round) ...
_SECURITY = re.compile(
    r"(?:\b(?:security (?:question|answer)s?|secret (?:question|answer)s?|memorable word|"
    r"questions? (?:secrète|de sécurité)|réponses? (?:secrète|de sécurité)|"
    r"sicherheits(?:frage|antwort)\w*|geheim(?:frage|antwort)\w*|"
    r"(?:pregunta|respuesta)s? (?:de seguridad|secreta)|"
    r"(?:domanda|risposta) (?:di sicurezza|segreta)|"
    r"(?:pergunta|resposta)s? (?:de segurança|secreta)|"
    r"beveiligingsvra(?:ag|gen)|geheime vraag|pytani\w* (?:bezpieczeństwa|pomocnicz\w*)|"
    r"(?:контрольн|секретн)\w* (?:вопрос|ответ|питанн|відповід)\w*|"
    r"güvenlik (?:sorusu|cevabı|yanıtı)|gizli (?:soru|cevap)\w*|säkerhetsfråg\w*|"
    r"sikkerheds?spørgsmål\w*|sikkerhetsspørsmål\w*|turvakysymy\w*|"
    r"(?:bezpečnostní|kontrolní) otázk\w*|biztonsági kérdés\w*|câu hỏi bảo mật|"
    r"pertanyaan keamanan|soalan keselamatan|ερώτηση ασφαλείας|"
    r"întrebare\w* (?:de securitate|secretă)|سؤال الأمان|السؤال السري|שאלת (?:ה)?אבטחה|"
    r"सुरक्षा प्रश्न|गुप्त प्रश्न)\b|"
    r"秘密の質問|秘密の答え|セキュリティ質問|合言葉|密保问题|密保答案|安全问题|密保問題|安全問題|"
    r"보안 ?질문|비밀 ?질문)", re.IGNORECASE)
SECURITY_WORDS = CaseFreeStrings(_SECURITY)
# ... beside a word for an answer ...
_ANSWER = re.compile(
    r"(?:\b(?:answers?|réponses?|antwort\w*|respuestas?|rispost[ae]|respostas?|antwoord\w*|"
    r"odpowied\w*|ответ\w*|відповід\w*|cevab\w*|yanıt\w*|svar\w*|vastau\w*|odpověď\w*|"
    r"válasz\w*|câu trả lời|jawapan|jawaban|απάντηση|răspuns\w*|إجابة|الإجابة|תשובה|उत्तर)\b|"
    r"答え|答案|回答|답)", re.IGNORECASE)
# ... and then its value, after a colon or "is" ("… (first pet): Caramel", "答えは「ぽち」")
_ANSWER_VALUE = re.compile(
    r"[^\n:：=]{0,48}?(?:[:：=]|\b(?:is|est|ist|es|é|è|era|war|was|jest|je|är|er|on)\b|"
    r"は|是|为|為|는|은)\s*[\"'«„“「『]?\s*[^\W_]", re.IGNORECASE)
# a second factor's spare codes written out: letters and digits mixed, grouped
_SPARE = re.compile(r"\b(?:backup|recovery|spare|reserve|2fa|two-factor)[ -]codes?\b",
                    re.IGNORECASE)
_SPARE_CODE = re.compile(r"(?<![\w-])(?=[\w-]*\d)(?=[\w-]*[^\W\d_])[^\W_]{3,6}(?:-[^\W_]{3,6})?"
                         r"(?![\w-])")


def announced_secret(raw: str) -> str | None:
    """A security question's answer given with its words, or a second factor's spare codes
    written out in letters and digits (``secret.security-answer``,
    ``secret.one-time-code``), or None."""
    if SECURITY_WORDS.may_match(raw) and (question := _SECURITY.search(raw)) is not None:
        for answer in _ANSWER.finditer(raw):
            end = max(question.end(), answer.end())
            if _ANSWER_VALUE.match(raw, end):
                return "secret.security-answer"
    for spare in _SPARE.finditer(raw):
        if len(_SPARE_CODE.findall(raw, spare.end(), spare.end() + 80)) >= 2:
            return "secret.one-time-code"
    return None
