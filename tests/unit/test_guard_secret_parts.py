"""The nineteenth guard round's secrets (issue 30): an IBAN by mod 97 at its country's length
whatever its letters' and digits' places, a card given in parts or by its CVV, a security
question's answer, spare 2FA codes in letters and digits, a key glued to a Japanese particle.
The numbers are made here (mod 97 and Luhn computed), the sentences are our own."""

from __future__ import annotations

import pytest

from eros.guard.core.guard_secrets import find_secret

FOUND = [
    # digits where the bank code's letters go: mod 97 holds at the country's length
    ("Her Italian account is IT91 4000 0012 3456 7890 1234 567", "secret.iban"),
    ("Konta numurs: LV03 2468 0135 7924 6801 3", "secret.iban"),
    ("contul ei ro25 1357 9135 7913 5791 3579", "secret.iban"),  # lower case
    ("IBAN RO25.1357.9135.7913.5791.3579", "secret.iban"),  # dotted groups
    ("Card ends in two pieces: 45398721 then 00913452", "secret.card"),
    ("Her Visa's CVV is 318", "secret.card"),
    ("Security question answer (first school): Hillcrest", "secret.security-answer"),
    ("Réponse à sa question secrète : Biscotte", "secret.security-answer"),
    ("Die Antwort auf seine Sicherheitsfrage lautet: Bremen", "secret.security-answer"),
    ("彼の秘密の質問の答えは「たま」", "secret.security-answer"),
    # all in lower case (every normalised view is): no upper-case letter is needed
    ("antwort auf seine sicherheitsfrage: bremen", "secret.security-answer"),
    ("Her two-factor recovery codes: k2p9-x7qa 4mzt-81bw", "secret.one-time-code"),
    ("彼のトークンはhf_Q4zLm8Rt2Vx9Kp3Wn7Yb5Cd1Fg6Hj0Ls", "secret.provider-key"),
    ("Paswọọdụ ya bụ Obi_2219kk", "secret.password"),
    ("Ny tenimiafina dia Ranomasina#42x", "secret.password"),
]


@pytest.mark.parametrize(("text", "kind"), FOUND)
def test_secrets_given_in_parts_or_by_their_words_are_found(text: str, kind: str) -> None:
    assert find_secret(text) == kind, text


KEPT = [
    "IT91 4000 0012 3456 7890 1234 568 was a typo on the invoice",  # mod 97 fails
    "User thinks security questions about pets are easy to guess.",
    "The bank asked her a security question on the phone yesterday.",
    "User keeps 2FA backup codes printed in a drawer.",
    "Bank told the user never to read out the CVV on a call.",
    "Orders 45398721 and 00913452 shipped on Monday.",  # no card word
    "User's flat is number 12 and the door code changes monthly.",
]


@pytest.mark.parametrize("text", KEPT)
def test_look_alikes_hold_no_secret(text: str) -> None:
    assert find_secret(text) is None, text
